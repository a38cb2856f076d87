"""Calibration against the real systems (Kafka, go-batcher, Aerospike); run scripts as
``python -m validate.<module>`` from the repository root."""
