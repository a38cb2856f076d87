"""Which service model the recorded Aerospike data support (issue 15): the level test and the
evidence tables behind FINDINGS.md. The model itself is product code:
simbatch/batching/servicecost.py and hostcores.py, fitted by simbatch/planning/fit.py and
judged by simbatch/planning/judge.py."""
