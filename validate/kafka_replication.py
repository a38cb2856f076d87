"""Replication measured on a local cluster of three brokers and predicted by the model
(``[broker] replicas``, ``simbatch/kafka/replication.py``; issue 14).

Why: a production topic has three replicas and its producers wait for every in-sync replica
(acks=all, the clients' default), so a request is answered only once the followers have
fetched its records; ``scenarios/r2-production.toml`` rests on that. The model builds the
wait from costs measured elsewhere: the broker's CPU per request and per record
(``models/kafka-broker-loopback.toml``, one broker, replication 1) and the consumer's fetch
time as a reply's way and the next Fetch's (the fit below). Nothing is fitted on replicated
runs.

Design: one cluster of three brokers (``validate/kafka_broker.py --brokers 3``); each
configuration at replication 1 and 3 (librdkafka, acks=all at 3), :data:`REPS` runs each,
interleaved (1, 3, 1, 3, ...), a configuration with a noisy run run again
(:data:`NOISY_ROUNDS`):

* ``sparse``: 200 messages 25 ms apart, linger 0, one partition (the calibration's fit
  configuration): every record alone, the broker idle between;
* ``dense``: Poisson at 1000 messages/s over 8 partitions, linger 10 ms;
* ``franz-go-sparse``: ``sparse`` with franz-go (production's client; the Go harness keeps
  its default acks, every in-sync replica), its round trip fitted on its own replication-1
  runs.

First, a warm-up: :data:`WARM_ROUNDS` untimed floods (20,000 messages at 10,000/s over 8
partitions, replication 3), then untimed rounds of the dense configuration at replication 3
until no JVM's compiler threads used :data:`SETTLED_JIT_CORES` over a round
(:func:`settle`). A fresh JVM compiles its hot paths for a minute or more, and three of
them compiling at once take this VM's CPU: measured 2026-11-28 on a fresh cluster, the dense
configuration at replication 3 read a p50 of 2.0 s, then 1.4 s, 0.75 s ... over its first
ten runs with the C2 compiler threads at 0.15-0.25 cores of each JVM's 0.3-0.4, and settled
at 12-14 ms (p99 37 ms) after some 70 s of traffic, each JVM then at 0.17-0.22 cores, the
compiler at 0.01-0.04 of it. After three floods alone (~36 s) its p50 read 12.0-17.6 ms
from the second run on in one session, but its p99 was still 80-250 ms, and in a CI job the
p50 read 20.7 ms (p99 327 ms): hence the rounds until the compilers settle (14 rounds,
~75 s, in the session of the table's last row).

What it found (2026-11-28, five fresh clusters; p50 and p99 in ms, measured / predicted;
sparse at replication 1 is fitted).

p50, ms:

| warm-up, runs | sparse rf1 | sparse rf3 | dense rf1 | dense rf3 |
|---|---|---|---|---|
| 4 floods, 4 | 1.12 / 1.13 | 2.21 / 2.15 | 10.68 / 10.52 | 12.34 / 11.14 |
| 3 floods, 3 | 1.21 / 1.20 | 2.08 / 2.28 | 10.59 / 10.58 | 12.47 / 11.27 |
| 3 floods, 3 | 1.07 / 1.07 | 2.23 / 2.08 | 10.81 / 10.49 | 12.91 / 11.15 |
| 10 floods, 3 | 1.07 / 1.08 | 2.22 / 2.13 | 10.48 / 10.44 | 12.13 / 11.14 |
| 3 floods, settled, 3 | 1.11 / 1.10 | 2.34 / 2.14 | 10.53 / 10.51 | 13.04 / 11.19 |

p99, ms:

| warm-up, runs | sparse rf1 | sparse rf3 | dense rf1 | dense rf3 |
|---|---|---|---|---|
| 4 floods, 4 | 2.18 / 2.01 | 8.76 / 3.05 | 14.4 / 11.8 | 73.0 / 13.3 |
| 3 floods, 3 | 4.25 / 2.85 | 6.08 / 3.90 | 14.2 / 13.4 | 177 / 14.3 |
| 3 floods, 3 | 2.66 / 2.83 | 8.62 / 3.84 | 17.7 / 11.6 | 83.3 / 13.3 |
| 10 floods, 3 | 2.35 / 2.27 | 4.03 / 3.32 | 13.3 / 12.0 | 27.4 / 13.3 |
| 3 floods, settled, 3 | 1.95 / 3.85 | 7.05 / 4.89 | 14.2 / 11.9 | 109 / 13.6 |

franz-go, in one session (3 floods, settled, 3 runs): p50 1.49 / 1.50 at replication 1
(fitted), 2.86 / 2.56 at 3; p99 5.22 / 5.13 and 9.86 / 6.18.

The p50 at three replicas is predicted within 15 % (without replication the model would read
the replication-1 figure, ~45 % low on the sparse configuration). Those predictions charged
a parked Fetch woken by an append its records alone; since 2026-11-29 it pays a fetch's
share, as the brokers' request log and CPU showed (``simbatch/kafka/replication.py``), which
adds 0.1-0.2 ms at three replicas. Judged again (``--from-csv``) on the four sessions of the
table whose runs were kept (rows 1, 2, 4 and 5), measured / predicted: sparse 2.21 / 2.25,
2.08 / 2.38, 2.22 / 2.23, 2.34 / 2.24 ms; dense 12.34 / 11.27, 12.47 / 11.43, 12.13 / 11.27,
13.04 / 11.31.

On another machine of the same type (2026-12-06: an AMD EPYC of family 26, its CPU about
twice as fast, the calibration's rung scaling the shipped costs by 0.51), the three JVMs' CPU
on the dense configuration at replication 1 read 0.186-0.191 cores beyond idle where the
model's costs give 0.297-0.300 (the line :func:`judge` prints), and inside the leader the
wait halved with it: the sparse configuration's produce request at acks=all took 0.92-1.24
ms (local 0.32-0.42, remote 0.51-0.64) against 0.24-0.48 at acks=1, six runs each
(``python -m validate.kafka_request_log --config sparse --reps 6``; 1.85-2.21 against
0.39-0.57 on 2026-11-29's machine). What the clients see did not follow: from replication
1 to 3 the p50 rose by 0.08 to 0.74 ms in those six rounds (median 0.34, the log on), and
in five sessions with it off by 0.14 to 1.35 ms from one round to the next, by 0.50, 0.77,
0.90, 1.04 and 1.18 ms on average (librdkafka; franz-go alike), where the model adds 0.83
with the file's costs and ~0.5 with them scaled to the CPU measured. So the costs are not
scaled.

Where the model's p50 at three replicas was right for a wrong reason (the same day, the four
sessions' runs, ``--from-csv``): two errors that cancelled.

* The consumer sees a record before its producer's ack at three replicas, after it at one.
  Consume minus ack, median: 0.11-0.26 ms at replication 1, -0.01 to -0.09 at 3 (p10 -0.13
  to -0.44, p90 0.08-0.20), on all three configurations. Kafka completes a partition's
  parked Fetches before its parked Produce requests when the high watermark moves
  (``Partition.scala``, ``DelayedOperations.checkAndCompleteAll``: ``fetch`` then
  ``produce``); at one replica the Produce is answered in its own request and the parked
  Fetch only in the ``finally`` after it. The model's consumer read a record
  ``fetch_ms`` after the ack at every replication, 0.16-0.26 ms late at three. Since
  2026-12-06 it reads it at the ack with followers (``simbatch/kafka/engine.py``), no
  parameter added; the table's last two columns print consume minus ack, measured beside
  predicted, which ``validate/test_kafka_replication.py`` judges (within 0.15 ms). Judged
  again on nine sessions' runs (``--from-csv``), measured / predicted at three replicas:
  consume minus ack -0.09 to +0.04 ms / 0.00; dense at one replica (predicted from the
  sparse fit) +0.11 to +0.20 / +0.18 to +0.25.
  On the wire (``validate/kafka_wire.py``, 2026-12-07) that figure is two shares the model
  reads as 0, which cancel in part: at three replicas the leader sent the consumer's reply
  0.01-0.29 ms before the produce reply (medians of runs), and the clients' own ways put
  the consumer 0.12-0.14 ms (librdkafka) and 0.04-0.07 ms (franz-go) behind; so franz-go's
  consumer reads 0.03-0.18 ms ahead of its ack (seven CI runs), a non-strict xfail since
  two of them missed the band.
* The model's ack is short at three replicas: from 1 to 3 it adds 0.77-0.89 ms, the
  sessions' acks 0.38-1.52 (median of the eight rows ~1.2; librdkafka 0.70, 1.13, 1.28,
  1.44). Not found; so the sparse p50 at three replicas now reads below the sessions'
  median: over the nine sessions, measured / predicted 0.74 / 1.39, 1.06 / 1.38, 1.14 /
  1.37, 1.18 / 1.39, 1.66 / 1.59, 1.68 / 1.42, 1.88 / 1.45, 2.02 / 1.64, 2.15 / 1.60 ms
  (mean absolute error 27 %, 32 % with the consumer as before; franz-go 0.86-2.23 / 1.32-1.86;
  dense 10.82-11.48 / 10.83-11.03, -4 to 0 %).

What spreads the rounds is the host's speed (2026-12-06, the same machine, 60 runs of the
sparse configuration over ten sessions). Each run's ack p50 follows librdkafka's internal
latency p50 (``client_int_p50_s``: from ``produce()`` to the request's writing, a fixed
piece of client work and a thread's wake-up), correlation 0.97 at one replica and 0.98 at
three, and the harness's own Python time from publish to ``produce()`` with it (0.93,
0.95): the internal latency read 17-66 us from run to run, the ack p50 0.24-0.88 ms at one
replica and 0.69-2.19 ms at three, about 14 and 35 times it, while no CPU was stolen
(``steal_share`` ~0) and the load average did not follow (0.11, 0.32). So the machine
ran the same work 3-4 times slower in some runs than in others, the brokers' threads with
it, and a run's replication wait grew with it. The model's costs are one machine's at one
speed, and :func:`judge` predicts a run at three replicas from the round trip of another
run (the replication-1 run paired with it), at another speed.

A first cut (the same day, CI jobs 87-98) read the speed from that internal latency: on
twelve sessions the sparse runs at three replicas came within 10 % per run on average, but
only librdkafka at linger 0 records it. Since then every harness run carries the host's
speed measured beside it (``validate/host_probe.py``: ``host_work_s``, a fixed piece of
Python work; ``host_wake_s``, a 50 ms wait's lateness; ``host_trip_s``, a one-byte round
trip between two processes), and the speed is read from the probe for every configuration.
Over eight sessions (24 runs a row), a run's ack p50 followed the wait's lateness most
closely: correlation 0.96 (sparse at three replicas; the work 0.91), 0.90 (franz-go at
three; the work 0.74), 0.90 and 0.85 at one replica. It follows it along a straight line
that meets zero at the same lateness on every sparse row, librdkafka and franz-go, at one
replica and three: 77.7-78.8 us (a line per row, 24 runs each), the select's 50 us timer
slack and the probe's own path. So a run's speed is its probe's wait lateness beyond that
floor (:class:`HostSpeed`), 9-71 us in those runs, and librdkafka's internal latency
followed it (1.14 times it, correlation 0.93).

:func:`at_host_speed` predicts each run at its own speed: its client's round trip and fetch
per unit of speed (the median over the session's fit runs of each one's fitted round trip
over its speed) times the run's speed, and the broker's CPU costs scaled by the run's speed
over the speed at which they hold. Both the floor and that speed are
``models/kafka-host-speed-loopback.toml``, written by ``--fit-speed DIR ...``
(:func:`fit_speed`): the floor on the sparse runs' acks at both replications
(:func:`fit_wake_floor`), then the costs' speed, of 20-80 us, the least mean absolute log
error of the sparse runs at three replicas. Fitted on four standalone sessions
(2026-12-06 05:26-05:36, their sparse runs in ``validate/kafka_replication_runs/``): floor
80.7 us, costs' speed 32.5 us (log error 0.080; 0.104 at 30, 0.098 at 35). Judged on the
runs of six fresh-clone CI jobs (95-100) and of a session after the fit (7 sessions, 21 runs
a row, none fitted on), predicted / measured per run, and each session's median of those:

* sparse: at each run's speed 10 % off on average (worst -26 %, 20 of 21 within 25 %,
  correlation 0.96), the sessions' medians +1, +5, +23, +7, +4, +1, -18 %; as
  :func:`judge` predicts, 34 % (worst +91 %, 11 of 21, correlation 0.49), -19, -17, +42,
  -19, -9, -9, +57 %;
* franz-go-sparse: 18 % (worst +56 %, 16 of 21, correlation 0.89), +10, +10, +10, -6, +17,
  +10, -32 %; as :func:`judge`, 30 % (worst +94 %, 13 of 21, correlation 0.56), -7, -18,
  -10, -23, -9, -3, +39 %: per run closer, but the sessions' medians within 25 % in six of
  seven either way. In CI 100 its runs 16-22 us above the floor took 0.93-1.08 ms, predicted
  0.65-0.92: near the floor the acks stay above the line it was fitted on;
* dense: 3 % (worst -17 %, 21 of 21); as :func:`judge`, 4 % (21 of 21).

Each session left out in turn from eight (the four fitted on and CI 95-98), the other seven
fitted: floor 76.9-79.9 us, costs' speed 35-37.5 us; the sessions' medians per run, sparse
+18, -7, +6, -9, -3, +3, +24, +3 %, franz-go +6, +2, -1, -6, +6, +7, +10, -8 %, dense -4 to
0 % but one -13 %.
``python -m validate.kafka_replication --from-csv --out DIR`` prints each run at its speed
under the table; ``validate/test_kafka_replication.py`` judges each configuration's median
of those per-run ratios at three replicas (librdkafka's strictly, franz-go's and the dense
one's as non-strict xfails: the test's marks). Not the ratio of the medians of prediction
and measurement: they come from different runs at different speeds (in the session after
the fit, franz-go's runs read +17, +39 and -53 %, the two medians +34 %).

One line per CPU. On another VM of the same kind but another CPU generation (2026-12-07:
an AMD EPYC of family 25, model 1, where 2026-12-06's was family 26; :func:`cpu_name` of
``validate/host_probe.py`` names it, as the go-batcher harness does) the probe read 126-165
us where 2026-12-06's runs read 96-126, and that machine's line read librdkafka's sparse
sessions at three replicas at 0.95-1.53 (median per session of at-speed over measured;
twelve sessions, three beyond 25 %: CI 144 1.39, 15:22 1.53, 17:22 1.36). A line fitted there
(``--fit-speed`` on the three plain sessions of 15:16-15:27, kept in
``validate/kafka_replication_runs/``): floor 24.8 us, costs' speed 65.0 us (log error 0.047);
it reads those three at 0.96-1.06 and the twelve whose runs were kept and not fitted on at
0.82-1.03 (the two beside a packet capture, 14:32 and 14:37; CI 146; the CI job after it;
17:22; CI 147, the first with the line; 18:11; CI 148, 0.82, its runs slower than their
probes said; CI 149; 19:35; CI 150; CI 151), franz-go's at 0.85-1.15 (all fifteen, where the
other machine's line read 0.86-1.47), but 2026-12-06's sessions at 1.20-1.79. So the probe-to-speed
line is a machine's: ``models/kafka-host-speed-loopback.toml`` holds one ``[[host_speed]]``
entry per CPU (``cpu``, its ``command`` and the fit's lines), the runs are read with the entry
naming this host's CPU (an entry may leave out the model: 2026-12-06's model number was not
recorded), and a host whose CPU has none predicts no run at its speed: the at-speed rows skip,
naming the command (``--fit-speed DIR ... [--on-cpu NAME]``) that adds its line; the others'
lines are kept. The broker file's own ``[host_speed]`` (the speed its costs hold at by the
broker's CPU, 70.4 us beyond 80.7) names its CPU too (2026-12-06's) and is read on that CPU
only: elsewhere a calibration session scales the file's costs on its own CPU fit runs
(``broker_costs.held_out_broker``), as it did before the probe. On this VM that reads the
dense rung's broker CPU -9, -4 and -4 % off (x 1.12, 1.18 and 1.10: CI 146, the job after it, CI
147; ``--ci --from-csv`` on their runs), where 2026-12-06's line read across CPUs gave -17, -9
and -9 %; the rung's p99 (a non-strict xfail) read 15.88, 14.53 and 15.58 ms against 16.92,
14.35 and 15.46 (measured 24.24, 19.98, 17.67), its p50 within 0.05 ms.

What the costs' speed holds: not the broker's CPU alone. A calibration session that scales
the models file's broker costs by one factor to fit its ``CPU_FIT`` runs' CPU (the JVM's,
from ``/proc``: ``broker_costs.held_out_broker``) measures the speed at which the costs
hold by CPU time there, since those runs carry the probe too (``HostSpeed.cpu_costs_at``;
the broker file states it since 2026-12-06, 70.4 us from CI 98-101's sessions,
``broker_costs.costs_speed``). In the four fresh-clone CI jobs with the probe whose
runs were kept (98-101) the factor read 0.61, 0.55, 0.40 and 0.42 at those runs' speeds of
47.4, 38.2, 28.8 and 28.8 us: the broker's CPU follows the probe's speed, and the costs hold
at 77, 69, 72 and 69 us, not the 32.5 the acks fit. At 70 us the runs at three replicas of
the thirteen probed sessions (39 a row; the four fitted on among them) come out short by a
median 0.41 ms (sparse), 0.39 (franz-go) and 0.39 (dense), off by 25, 24 and 4 % on average
against 10, 13 and 2 % at 32.5: the ~0.4 ms the plain prediction also misses at three
replicas (below). So the fitted costs' speed carries a piece of the replication round the
model lacks, as broker CPU that the JVM does not burn (2.1 times its CPU at a run's speed);
the at-speed rows are judged with the fitted figure all the same: it is shared by every
configuration and was fitted on sparse runs alone.

A models file fitted at a stated host speed (``broker_costs.fit_broker``'s
``[host_speed]``; tried 2026-12-06, not shipped): this VM's ladder refitted so (164 us a
request unit, a cold start 361, a record 0.81, at 59.0 us) with the followers' cold start
measured on this VM and taken at that speed too (``python -m validate.kafka_cold_start
--replicas 3 --gaps 0.5 25 --rounds 4``: 210 us at its runs' 39.5 us, 320 at 59.0), the
acks fit the costs' speed at 30.0 us (log error 0.087; 25.0 and 0.078 with the old
follower figure of 197). Judged on sixteen probed sessions (the four fitted on and CI
95-106), the sessions' medians of the sparse runs at three replicas at their speed come
within 25 % in 13 of 16 (CI 103, 104 and 106, its slowest, +30, +52 and +34 %; 15 of 16 with
197 us) and franz-go's in 9 of 12, against 16 of 16 and 11 of 12 with the shipped files
(mean error per run 15.7 and 20.6 %, against 10.2 and 14.9). The slow runs' acks grow less
than their probe's lateness says (CI 104: 1.88 ms at 38.5 us, 2.30 at 64.7 and 2.51 at
67.2), and a file whose costs all grow with the speed reaches them high; the shipped
file's mix of costs, fitted where the speed was not read, misses that less. So the costs'
speed by CPU stays a calibration's figure for now (``python -m validate.calibrate_kafka``
prints it), and the replication suite keeps the shipped files. Command for the sessions'
figures: a scratch script over ``at_host_speed`` at each costs' speed.

What the piece is, measured (2026-12-06, one session each, probe 124-157 us): the follower's
next Fetch is handled on a cold thread. Kafka's request handlers take requests from one
queue in turn (the one that has waited longest; ``validate/kafka_handlers.py`` cites the
source), so at the sparse feed each request lands on a handler idle for some 60 ms.
``python -m validate.kafka_handlers --reps 2``: the leader's handlers took 1.4 requests per
message at one replica and 3.4 at three (the two followers' next Fetches besides the
produce and the consumer's Fetch), spread evenly over its eight handlers (83-86 each over
200 messages), at 440-450 and 360-390 us of CPU per request handled, its processors
550-590 and 870-950 us per message. The model handles that Fetch warm (the broker ran a
stage within 1 ms): ~55 us on the I/O thread at this speed. ``python -m
validate.kafka_request_log --config sparse`` (the log on, so slower) read the followers'
next Fetches at 0.25-0.32 ms local time at the leader, the produce request's local time
0.80-0.98 ms at three replicas against 0.23-0.32 at one. Two such Fetches, in parallel, are
~0.3 ms of the follower round. The model's cold start is the broker's (the first stage
after it idled, ``simbatch/kafka/broker.py``), fitted so on the ladder; a cold start per
thread would need the ladder refitted under it (at 1000 msg/s over 32 partitions each
handler idles ~8 ms, and a request there costs the warm figure).

A what-if, not committed (the model patched in a scratch script): with the leader's handling
of each follower's next Fetch charged ``cold_us``, and the reply to each woken Fetch sent
cold too (the follower's connection's processor last ran a round before), and the broker's
costs at the speed their CPU measures (70 us) instead of the fitted 32.5, the thirteen
probed sessions' runs at three replicas read sparse 11.7 % off on average (34 of 39 within
25 %; the sessions' medians +23, -9, +4, +2, +5, +7, +28, +11, +8, +6, -17, -18, +1 %),
franz-go 15.4 % (34 of 39; 12 of 13 medians within 25 %, CI 100 -28 %), dense 2.5 %, the
residual medians -0.05, -0.18 and -0.18 ms: near the fitted file's 9.6, 13.1 and 2.3 %
(the four fitted on among them) with no speed fitted. The next Fetch's cold start alone
read 14.2, 12.4 and 2.4 % (residual +0.15, +0.10, +0.15 ms).

A refit on eight sessions (the four and CI 95-98: floor 77.7 us, costs' speed 37.5),
judged on the five after (a standalone session and CI 99-102, 15 runs a row), read sparse
10.7 % per run on average (15 of 15 within 25 %; sessions' medians +1, -6, -22, -19, -6 %)
and franz-go 15.8 % (10 of 15; +8, +6, -27, -7, -2 %), where the shipped file read 11.1 %
(14 of 15; +4, +1, -18, -14, -2 %) and 19.2 % (10 of 15; +17, +10, -32, -4, +3 %). Not
shipped: per run no better for librdkafka, and its sessions' medians, the strict row's,
nearer the band's edge.

The probe is a proxy for the host's speed, not the speed itself: in CI 97 the sparse runs at
three replicas read 24-26 us of it, while librdkafka's internal latency (21-36 us, 1.14
times the probe's speed on average) put two of them at 18-21, and the session's median came
out +23 %.

The test's p50 at three replicas, within 25 % in every CI job before, missed on that
machine in four of seven sessions (franz-go 0.97 ms measured against 1.63 predicted;
sparse 1.18 against 1.61; in fresh-clone CI runs sparse 1.14 against 1.59 and franz-go 1.02
against 1.48, and sparse 1.06 against 1.58; where the sparse row held, 1.68-2.15 ms
measured, 1.69-1.88 predicted): its rounds' p50s spread 2x within a session (0.72, 1.15 and
1.66 ms in the first of those CI runs), the sessions' medians 1.0-2.2 ms, and the runs whose
topic the controller's broker led were no slower than the others. So the sparse rows are
non-strict xfails there too (``validate/test_kafka_replication.py``).

A follower's append after an idle spell paid the request path's cold start (438 us) until
2026-11-29; its fetcher thread's was measured apart since (``python -m
validate.kafka_cold_start --replicas 3``: 197 us, ``[broker] follower_cold_us``). Judged
again on the kept runs of nine CI jobs (68-71, 73-77), the sparse rows at three replicas
went from +15, +7, +11, -2, +17, +16, +22, +17, +16 % to +3, -4, -1, -12, +3, +3, +8, +5,
+3 % (librdkafka; mean +13 to +1 %) and from +5, +10, +12, -4, +24, +3, +9, +2, +12 % to
-5, +0, +2, -13, +12, -9, -2, -8, +1 % (franz-go; mean +8 to -2 %).

The p99 at three replicas is missed: 1.2-2.9x the model's on the sparse configuration, 2-12x
on the dense one, lowest after the longest warm-up (ten floods) but 109 ms after the
compilers settled in another session. What holds it: sampled every 0.1 s over three runs of
the dense configuration after the compilers had settled (2026-11-28: per thread from
``/proc``; p99 22, 35 and 107 ms), the windows whose messages took 30-126 ms are those in
which one JVM's C2 compiler burst to 0.3-0.8 cores, or G1's concurrent and worker threads
ran (0.2-0.5 cores), with the machine at 1.5-1.9 of its 2 vCPUs (the harness's own ~0.4-0.5
included); elsewhere it ran at 1.0-1.3 and messages took 15-25 ms. The compilers still burst
in every run after "settling" (which reads their CPU over a whole round), and the model's
shared cores hold only the request stages (0.66 cores predicted for the three brokers then,
0.79 with the woken Fetch's share): neither the compiler, the collector's concurrent threads
nor the harness takes them.

Since 2026-11-28's last CI run, the dense configuration at three replicas has missed its
p50 in most sessions (16-32 ms against 11.2-11.5), some of its partitions committing
50-520 ms late while the machine was half idle. The brokers' request log
(``validate/kafka_request_log.py``, 2026-11-29) shows why: the producer's connection to one
leader saturates. Its requests are served one at a time (a connection is muted while one is
served), each waits at acks=all for the followers' next Fetch, and librdkafka sends one
partition per request, 110-180 a second to each leader; when the followers' turns lengthen
(1-3 ms) a leader's requests take as long as the time between them and its queue grows
through the run. The model has these mechanisms and the same cliff, but its follower round
is shorter than the real one (replication adds 1.0 ms to its requests, 1.6-2.2 ms to the
brokers'), so it stays below it. The followers' appends are not where it is short: their
fetcher threads used 120-190 us of CPU per message over three runs of the dense
configuration at three replicas (2026-11-29, ``validate.broker_jvm.fetcher_cpu_s`` on a
cluster warmed as above), where the model's followers use 189 (550-800 against 644 on the
sparse one).

The client's round trip and the consumer's fetch time (``validate.kafka_fit.fit``) are
fitted on the ``sparse`` runs at replication 1, one per run, as the calibration does; the
model then predicts every configuration's p50 and p99 (median over runs of each run's
figure) with the shipped broker costs on three brokers sharing 2 cores (``colocated``: the
three JVMs run on this VM's 2 vCPUs).

``python -m validate.kafka_replication [--reps 4] [--warm 3] [--out DIR] [--from-csv]``:
starts the cluster (the local one: the followers are on loopback) and prints measured beside
predicted, with each run's CSV in ``DIR`` (``--from-csv``: judge those again). ``--cpu``:
instead, the cluster's CPU per message of the dense configuration at each replication,
measured beside the model's (:func:`measure_cpu`).
:func:`judge` gives the figures for ``validate/test_kafka_replication.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from validate.broker_jvm import thread_usage
from validate.calibrate_kafka import noise, predict
from validate.host_probe import cpu_name
from validate.kafka_fit import Fitted, consume_after_ack, fit_runs, run_percentile
from validate.kafka_harness import HarnessConfig, HarnessError, read_csv, run
from validate.kafka_models import (
    HostSpeed,
    broker_model_path,
    broker_speed_model,
    host_speed_lines,
    host_speed_model,
    model_broker,
    no_speed_line,
    speed_model_path,
)

if TYPE_CHECKING:
    from validate.kafka_broker import KafkaBroker

HERE = Path(__file__).resolve().parent
BROKERS = 3
REPS = 4
CONFIGS = {
    "sparse": HarnessConfig(n_messages=200, interval_ms=25, linger_ms=0, n_partitions=1),
    "dense": HarnessConfig(n_messages=2000, feed="poisson", interval_ms=1, linger_ms=10,
                           n_partitions=8),
    "franz-go-sparse": HarnessConfig(client="franz-go", n_messages=200, interval_ms=25,
                                     linger_ms=0, n_partitions=1),
}
WARM = HarnessConfig(n_messages=20_000, feed="poisson", interval_ms=0.1, linger_ms=5,
                     n_partitions=8, replication=3, warmup_s=0.5, label="warm")
"""The untimed flood each of :data:`WARM_ROUNDS` sends first (module docstring)."""
WARM_ROUNDS = 3
SETTLED_JIT_CORES = 0.05
"""A JVM has compiled its hot paths when its compiler threads used less than this over a
round of the dense configuration (module docstring)."""
SETTLE_MAX = 20
FIT = ("sparse", 1)
"""The runs librdkafka's round trip is fitted on (module docstring)."""
FITS = {"librdkafka": FIT, "franz-go": ("franz-go-sparse", 1)}
"""Each client's: its configurations are predicted from its own round trip."""
REPLICATIONS = (1, 3)
NOISY_ROUNDS = 3
"""At most this many more rounds of a configuration with a noisy run (the calibration's
rule, ``calibrate_kafka.noise``: over a tenth of its messages stalled by more than 10 ms, or
over 5 % of the VM's CPU stolen), each at both replications; then each (configuration,
replication) keeps its ``reps`` least noisy runs and the others go to ``discarded/``. In the
sessions of 2026-11-28 the slow runs of the dense configuration at replication 3 were the
stalled ones (p50 61 ms with half its messages stalled, beside 12.7 ms with 6-10 %); not all
are (2026-11-29: runs of 113, 302 and 342 ms discarded, but one of 94 ms with 9 % stalled
kept)."""


@dataclass(frozen=True)
class Row:
    name: str
    replication: int
    runs: int
    measured_p50: float
    measured_p99: float
    predicted_p50: float
    predicted_p99: float
    fitted_on: bool
    measured_after_ack: float = float("nan")
    """Where the consumer reads a record against its ack: the median message's consume
    minus ack time (``kafka_fit.consume_after_ack``), seconds."""
    predicted_after_ack: float = float("nan")


def config_of(name: str, replication: int) -> HarnessConfig:
    return replace(CONFIGS[name], replication=replication, label=f"{name}-rf{replication}")


def measure(out_dir: Path, reps: int = REPS, names=tuple(CONFIGS),
            warm_rounds: int = WARM_ROUNDS) -> dict:
    """Warm a fresh cluster up, then run every configuration ``reps`` times, interleaved,
    and again (:data:`NOISY_ROUNDS`) while one has fewer than ``reps`` quiet runs; returns
    ``{(name, replication): [the reps least noisy runs]}`` (each also in ``out_dir``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[tuple[str, int], list[tuple[np.ndarray, Path]]] = {}

    def round_of(name: str, rep: int) -> None:
        for rf in REPLICATIONS:
            path = out_dir / f"{name}-rf{rf}-{rep}.csv"
            rec = run(cluster.bootstrap, config_of(name, rf), path, broker_pid=cluster.pids)
            runs.setdefault((name, rf), []).append((rec, path))
            print(f"{name} rf{rf} run {rep}: p50 {np.nanmedian(rec['latency_s']) * 1e3:.2f} "
                  f"ms, noise {noise(rec):.2f}", file=sys.stderr)

    with warm_cluster(warm_rounds) as cluster:
        for rep in range(reps):
            for name in names:
                round_of(name, rep)
        for extra in range(NOISY_ROUNDS):
            short = [name for name in names if any(
                sum(noise(rec) <= 1 for rec, _ in runs[(name, rf)]) < reps
                for rf in REPLICATIONS)]
            for name in short:
                round_of(name, reps + extra)
    return {key: _quietest(done, reps, out_dir) for key, done in runs.items()}


@contextmanager
def warm_cluster(warm_rounds: int = WARM_ROUNDS) -> Iterator[KafkaBroker]:
    """A fresh local cluster of :data:`BROKERS`, warmed up (``warm_rounds`` of :data:`WARM`)
    and settled (:func:`settle`), stopped on leaving (module docstring)."""
    from validate.kafka_broker import KafkaBroker

    with KafkaBroker(brokers=BROKERS) as cluster:
        for w in range(warm_rounds):
            rec = run(cluster.bootstrap, WARM)
            print(f"warm-up {w}: p50 {np.nanmedian(rec['latency_s']) * 1e3:.0f} ms",
                  file=sys.stderr)
        settle(cluster.bootstrap, cluster.pids)
        yield cluster


def _quietest(done: list[tuple[np.ndarray, Path]], reps: int, out_dir: Path) -> list:
    """The ``reps`` least noisy runs, in the order they ran; the others' CSVs are moved to
    ``out_dir/discarded`` (so that :func:`read` finds what was judged)."""
    ranked = sorted(range(len(done)), key=lambda i: noise(done[i][0]))
    for i in ranked[reps:]:
        rec, path = done[i]
        (out_dir / "discarded").mkdir(exist_ok=True)
        path.replace(out_dir / "discarded" / path.name)
        print(f"discarded {path.name}: noise {noise(rec):.2f}", file=sys.stderr)
    return [done[i][0] for i in sorted(ranked[:reps])]


def settle(bootstrap: str, pids: list[int], max_rounds: int = SETTLE_MAX) -> int:
    """Run the dense configuration at three replicas, untimed, until no JVM's compiler
    used :data:`SETTLED_JIT_CORES` over a round (at most ``max_rounds``; the last round
    says if it did not settle); returns the rounds run."""
    for k in range(1, max_rounds + 1):
        before = [thread_usage(pid)["jit_cpu_s"] for pid in pids]
        t0 = time.perf_counter()
        rec = run(bootstrap, config_of("dense", 3))
        span = time.perf_counter() - t0
        jit = [(thread_usage(pid)["jit_cpu_s"] - b) / span for pid, b in zip(pids, before)]
        print(f"settling {k}: p50 {np.nanmedian(rec['latency_s']) * 1e3:.1f} ms, compilers "
              f"at {', '.join(f'{c:.2f}' for c in jit)} cores", file=sys.stderr)
        if max(jit) < SETTLED_JIT_CORES:
            return k
    print(f"the compilers did not settle in {max_rounds} rounds", file=sys.stderr)
    return max_rounds


CPU_SIZES = (2000, 6000)
"""The dense configuration's runs :func:`measure_cpu` takes the slope between (messages)."""


def measure_cpu(reps: int = 3, warm_rounds: int = WARM_ROUNDS) -> dict[int, list[float]]:
    """The three JVMs' CPU per message (ms) of the dense configuration at each of
    :data:`REPLICATIONS`, once per rep: the slope of their CPU time (``/proc/PID/stat``) over a
    run of :data:`CPU_SIZES` messages, so the runs' set-up (the topic, the clients joining)
    and the JVMs' idle CPU over it drop out; on a fresh cluster warmed up and settled as
    :func:`measure` does, the sizes and replications interleaved."""
    from validate.broker_jvm import process_cpu_s

    out: dict[int, list[float]] = {rf: [] for rf in REPLICATIONS}
    with warm_cluster(warm_rounds) as cluster:
        for rep in range(reps):
            for rf in REPLICATIONS:
                cpu = []
                for n in CPU_SIZES:
                    before = sum(process_cpu_s(pid) for pid in cluster.pids)
                    run(cluster.bootstrap, replace(config_of("dense", rf), n_messages=n))
                    cpu.append(sum(process_cpu_s(pid) for pid in cluster.pids) - before)
                out[rf].append((cpu[1] - cpu[0]) / (CPU_SIZES[1] - CPU_SIZES[0]) * 1e3)
                print(f"rf{rf} run {rep}: {out[rf][-1]:.3f} ms of CPU per message",
                      file=sys.stderr)
    return out


def model_cpu(seeds: int = 3) -> dict[int, float]:
    """The model's CPU per message (ms) of the dense configuration at each of
    :data:`REPLICATIONS` on the three brokers (:func:`judge`'s, the shipped costs), the
    median over ``seeds`` runs; the round trip is ``models/kafka-loopback.toml``'s (the CPU
    does not depend on it)."""
    import tomllib

    from simbatch.kafka import simulate as simulate_kafka
    from validate.kafka_fit import Fitted, model_case

    models = HERE.parent / "models"
    fitted = Fitted.from_model(tomllib.loads((models / "kafka-loopback.toml").read_text()))
    broker = {**(model_broker(models) or {}), "colocated": True}
    out = {}
    for rf in REPLICATIONS:
        cfg = config_of("dense", rf)
        case = model_case(cfg.label or "dense", cfg, fitted, broker, n_brokers=BROKERS)
        out[rf] = float(np.median([simulate_kafka(case, seed).broker_cpu_s
                                   for seed in range(seeds)])) / cfg.n_messages * 1e3
    return out


def read(out_dir: Path) -> dict:
    runs: dict[tuple[str, int], list[np.ndarray]] = {}
    for path in sorted([*out_dir.glob("*-rf*-*.csv"), *out_dir.glob("*-rf*-*.csv.gz")]):
        name, rf, _ = path.name.split(".")[0].rsplit("-", 2)
        runs.setdefault((name, int(rf[2:])), []).append(read_csv(path))
    missing = [f for f in FITS.values()
               if f not in runs and any(n == f[0] for n, _ in runs)]
    if FIT not in runs or missing:
        lacking, replication = (missing or [FIT])[0]
        raise HarnessError(f"{out_dir}: no runs of {lacking} at replication {replication} to "
                           "fit on")
    return runs


CPU_ON = ("dense", 1)
"""The runs whose three JVMs' CPU :func:`judge` prints beside the model's."""


def judge(runs: dict, per_run: int = 5) -> tuple[list[Row], str]:
    """Fit each client on its :data:`FITS` runs, predict every configuration (module
    docstring); the rows, and a line with the three JVMs' CPU on :data:`CPU_ON`'s runs
    beyond their idle CPU, less their compilers' (``broker_costs.work_cores``), measured
    beside the model's."""
    from validate.broker_costs import work_cores

    fits = {client: fit_runs(runs[f]) for client, f in FITS.items() if f in runs}
    broker = model_broker(HERE.parent / "models")
    if broker is None:
        raise HarnessError(f"no broker costs in {broker_model_path(HERE.parent / 'models')}")
    note = f"{config_of(*CPU_ON).label}: the JVMs' CPU not measured"
    rows = []
    for (name, rf), measured in sorted(runs.items()):
        cfg = config_of(name, rf)
        fitted = fits[cfg.client]
        k = min(len(measured), len(fitted))
        got = predict(cfg.label or name, cfg, fitted[:k], measured[:k],
                      [{**broker, "colocated": True}] * k,
                      per_run=per_run, n_brokers=BROKERS)
        rows.append(Row(name, rf, k, run_percentile(measured[:k], 0.5),
                        run_percentile(measured[:k], 0.99), got["p50"], got["p99"],
                        (name, rf) in FITS.values(), consume_after_ack(measured[:k]),
                        got["consume_after_ack"]))
        cpu = [work_cores(r) for r in measured[:k] if np.isfinite(r["broker_cpu_s"][0])] \
            if (name, rf) == CPU_ON else []
        if cpu:
            idle = broker.get("idle_cores", 0.0)
            note = (f"{cfg.label}: the three JVMs' CPU beyond idle measured "
                    f"{np.median(cpu):.3f} cores (median of {len(cpu)} runs), the model's "
                    f"{got['broker_cpu'] - idle:.3f}")
            cpu_speed = broker_speed_model(HERE.parent / "models")
            speeds = [cpu_speed.of(r) for r in measured[:k]] if cpu_speed else []
            if speeds and all(v > 0 for v in speeds):
                assert cpu_speed is not None
                fast = predict(cfg.label or name, cfg, fitted[:k], measured[:k],
                               [{**cpu_speed.costs(broker, v), "colocated": True}
                                for v in speeds], per_run=per_run, n_brokers=BROKERS)
                note += (f", {fast['broker_cpu'] - idle:.3f} with its costs at each run's "
                         f"host speed (a median {np.median(speeds) * 1e6:.1f} us; they hold "
                         f"at {cpu_speed.costs_at_s * 1e6:.1f} by the broker's CPU)")
    return rows, note


SPEED_NAME = "sparse"
"""The configuration the host-speed file is fitted on (:func:`fit_speed`): librdkafka at
linger 0, every record alone, where the host's speed is most of the ack's time."""
SPEED_REF_GRID_US = tuple(20.0 + 2.5 * i for i in range(25))
"""The host speeds tried for the shipped costs' (:func:`fit_speed`): 20 to 80 us."""


@dataclass(frozen=True)
class SpeedRun:
    name: str
    replication: int
    run: int
    speed_fit_s: float        # the host speed of the fit run ...
    speed_s: float            # ... and of the run predicted (HostSpeed.of)
    measured_p50: float
    predicted_p50: float      # the shipped costs and the fit run's round trip, as judge()
    at_speed_p50: float       # both scaled to the run's host speed


def at_host_speed(runs: dict, speed: HostSpeed | None, per_run: int = 5,
                  keys: tuple[tuple[str, int], ...] | None = None) -> list[SpeedRun]:
    """Each run of every configuration but the fitted ones (or of ``keys``) predicted as
    :func:`judge` does, from its client's fit run paired with it, and again at the run's
    host speed (``speed``): its client's round trip and fetch per unit of speed (the median
    over the session's fit runs of each one's fitted figure over its speed) times this
    run's speed, the broker's costs scaled by this run's speed over ``speed.costs_at_s``.
    Runs without the probe's figure (or at or below its floor) are left out; nothing
    without ``speed`` or the broker's costs file."""
    broker = model_broker(HERE.parent / "models")
    if speed is None or broker is None:
        return []
    out = []
    for name, rf in keys or sorted(k for k in runs if k not in FITS.values()):
        cfg = config_of(name, rf)
        measured, fits = runs.get((name, rf), []), runs.get(FITS[cfg.client], [])
        fitted, fit_speeds = fit_runs(fits), [speed.of(r) for r in fits]
        fast_fits = [(f, s) for f, s in zip(fitted, fit_speeds) if s > 0]
        if not fast_fits:
            continue
        append_per_s = float(np.median([f.append_ms / s for f, s in fast_fits]))
        fetch_per_s = float(np.median([f.fetch_ms / s for f, s in fast_fits]))
        for k, (rec, f, s_fit) in enumerate(zip(measured, fitted, fit_speeds)):
            s = speed.of(rec)
            if not s > 0:
                continue
            base = predict(cfg.label or name, cfg, [f], [rec],
                           [{**broker, "colocated": True}], per_run=per_run,
                           n_brokers=BROKERS)
            scaled = Fitted(append_per_s * s, f.append_ratios, fetch_per_s * s,
                            f.fetch_ratios)
            fast = predict(cfg.label or name, cfg, [scaled], [rec],
                           [{**speed.costs(broker, s), "colocated": True}], per_run=per_run,
                           n_brokers=BROKERS)
            out.append(SpeedRun(name, rf, k, s_fit, s, run_percentile([rec], 0.5),
                                base["p50"], fast["p50"]))
    return out


def fit_wake_floor(pairs: dict[int, list[tuple[float, float]]]) -> float:
    """The probe's wait lateness at which the acks would take no time: each replication's
    (``host_wake_s``, ack p50) pairs on a straight line through it, one slope per
    replication, one floor for all (least squares; seconds)."""
    import scipy.optimize

    top = min(w for p in pairs.values() for w, _ in p)

    def residual(floor: float) -> float:
        total = 0.0
        for p in pairs.values():
            x, y = np.array(p).T
            x = x - floor
            slope = float(x @ y / (x @ x))
            total += float(((y - slope * x) ** 2).sum())
        return total

    return float(scipy.optimize.minimize_scalar(residual, bounds=(0.0, top), method="bounded",
                                                options={"xatol": 1e-8}).x)


def wake_pairs(sessions: list[dict]) -> dict[int, list[tuple[float, float]]]:
    """Each run of :data:`SPEED_NAME` with the probe's figure in ``sessions`` (each
    :func:`read`'s) as (``host_wake_s``, its ack p50), by replication (seconds)."""
    pairs: dict[int, list[tuple[float, float]]] = {}
    for runs in sessions:
        for rf in REPLICATIONS:
            for rec in runs.get((SPEED_NAME, rf), []):
                wake = float(rec["host_wake_s"][0])
                if np.isfinite(wake):
                    ack = run_percentile([rec], 0.5, of=lambda r: r["ack_s"] - r["produce_s"])
                    pairs.setdefault(rf, []).append((wake, ack))
    return pairs


def fit_speed(sessions: list[dict], per_run: int = 5) -> tuple[HostSpeed, list[str]]:
    """Fit :class:`HostSpeed` on :data:`SPEED_NAME`'s runs of ``sessions`` (each
    :func:`read`'s): the floor (:func:`fit_wake_floor`) on each run's ack p50 at both
    replications, then the speed at which the shipped costs hold, of
    :data:`SPEED_REF_GRID_US`, the least mean absolute log error of the runs at three
    replicas predicted at their speed (:func:`at_host_speed`); and lines saying how."""
    pairs = wake_pairs(sessions)
    if set(pairs) != set(REPLICATIONS) or min(len(p) for p in pairs.values()) < 3:
        raise HarnessError(f"fitting the host speed needs at least 3 runs of {SPEED_NAME} "
                           f"at each replication with the host probe's figures; got "
                           f"{ {rf: len(p) for rf, p in sorted(pairs.items())} }")
    floor = fit_wake_floor(pairs)
    lines = [f"wake floor {floor * 1e6:.1f} us, fitted on {sum(map(len, pairs.values()))} "
             f"runs of {SPEED_NAME} (" + ", ".join(
                 f"{len(p)} at replication {rf}" for rf, p in sorted(pairs.items())) + ")"]
    if model_broker(HERE.parent / "models") is None:
        raise HarnessError(f"no broker costs in {broker_model_path(HERE.parent / 'models')} "
                           "to fit the speed they hold at")
    errors = []
    for ref_us in SPEED_REF_GRID_US:
        speed = HostSpeed(floor, ref_us * 1e-6)
        rows = [r for runs in sessions for r in at_host_speed(
            runs, speed, per_run, keys=((SPEED_NAME, REPLICATIONS[-1]),))]
        errors.append(float(np.mean([abs(np.log(r.at_speed_p50 / r.measured_p50))
                                     for r in rows])))
    best = int(np.argmin(errors))
    lines.append(f"the costs' speed {SPEED_REF_GRID_US[best]:.1f} us, fitted on {len(rows)} "
                 f"runs of {SPEED_NAME} at replication {REPLICATIONS[-1]}; mean absolute log "
                 "error per speed tried: " + ", ".join(
                     f"{u:g} {e:.3f}" for u, e in zip(SPEED_REF_GRID_US, errors)))
    return HostSpeed(floor, SPEED_REF_GRID_US[best] * 1e-6), lines


SPEED_HEADER = [
    "# How fast the host ran a replication run, from its host probe (validate/host_probe.py),",
    "# and at what speed the broker's costs (kafka-broker-loopback.toml) hold: one line per CPU",
    "# (validate/kafka_replication.py's docstring, \"One line per CPU\"), each written by",
    "# validate/kafka_replication.py --fit-speed. Do not edit by hand: re-run the command.", ""]
"""The host-speed file's opening comment (:func:`with_speed_entry`)."""


def speed_entry(cpu: str, speed: HostSpeed, dirs: list[Path], lines: list[str]) -> str:
    """The ``[[host_speed]]`` entry of ``cpu`` for the line ``speed`` fitted on the sessions
    ``dirs`` (:func:`fit_speed`, which says how in ``lines``)."""
    import datetime as dt
    import json
    import shlex
    import textwrap

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = shlex.join(["python", "-m", "validate.kafka_replication", "--fit-speed",
                          *map(str, dirs), "--on-cpu", cpu])
    return "\n".join([            # JSON's string escapes are TOML's basic string's
        "[[host_speed]]", f"cpu = {json.dumps(cpu)}", f'fitted_on = "{now}"',
        f"command = {json.dumps(command)}",
        *(f"# {part}" for line in lines for part in textwrap.wrap(line, 96)),
        f"wake_floor_us = {speed.wake_floor_s * 1e6:.1f}",
        f"costs_at_us = {speed.costs_at_s * 1e6:.1f}", ""])


def with_speed_entry(text: str | None, cpu: str, entry: str) -> tuple[str, bool]:
    """The host-speed file ``text`` (None: no file yet) with ``cpu``'s entry set to
    ``entry`` (:func:`speed_entry`), every other CPU's kept as it stands; and whether an
    entry of ``cpu`` was replaced."""
    import re
    import tomllib

    if text is None:
        return "\n".join(SPEED_HEADER) + "\n" + entry, False
    head, *blocks = re.split(r"(?m)^\[\[host_speed\]\]\n", text)
    out, replaced = [head], False
    for block in blocks:
        if tomllib.loads(block).get("cpu") == cpu:
            block, replaced = entry.removeprefix("[[host_speed]]\n"), True
        out.append(block if block.endswith("\n\n") else block.rstrip("\n") + "\n\n")
    if not replaced:
        out.append(entry.removeprefix("[[host_speed]]\n"))
    return "[[host_speed]]\n".join(out).rstrip("\n") + "\n", replaced


def speed_table(rows: list[SpeedRun], speed: HostSpeed | None) -> str:
    if speed is None:
        return no_speed_line()
    lines = [f"Each run at its host speed (the probe's wait lateness beyond "
             f"{speed.wake_floor_s * 1e6:.1f} us; the costs' {speed.costs_at_s * 1e6:.1f} us):",
             "| configuration | replicas | run | fit run's speed | speed | p50 measured | "
             "p50 predicted | p50 at its speed | at its speed / measured |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.name} | {r.replication} | {r.run} | {r.speed_fit_s * 1e6:.1f} us "
                     f"| {r.speed_s * 1e6:.1f} us | {r.measured_p50 * 1e3:.2f} ms "
                     f"| {r.predicted_p50 * 1e3:.2f} ms | {r.at_speed_p50 * 1e3:.2f} ms "
                     f"| {r.at_speed_p50 / r.measured_p50 - 1:+.0%} |")
    return "\n".join(lines)


def table(rows: list[Row]) -> str:
    lines = ["| configuration | replicas | runs | p50 measured | p50 predicted | p99 measured "
             "| p99 predicted | consume - ack measured | consume - ack predicted |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        name = r.name + (" (fitted)" if r.fitted_on else "")
        lines.append(f"| {name} | {r.replication} | {r.runs} | {r.measured_p50 * 1e3:.2f} ms "
                     f"| {r.predicted_p50 * 1e3:.2f} ms | {r.measured_p99 * 1e3:.2f} ms "
                     f"| {r.predicted_p99 * 1e3:.2f} ms | {r.measured_after_ack * 1e3:+.2f} ms "
                     f"| {r.predicted_after_ack * 1e3:+.2f} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--warm", type=int, default=WARM_ROUNDS)
    parser.add_argument("--out", type=Path, default=Path("kafka-replication"))
    parser.add_argument("--from-csv", action="store_true",
                        help="judge the runs already in --out instead of measuring")
    parser.add_argument("--cpu", action="store_true",
                        help="measure the cluster's CPU per message instead (measure_cpu)")
    parser.add_argument("--fit-speed", type=Path, nargs="+", metavar="DIR",
                        help="instead, fit the host-speed file on these sessions' runs "
                             "(fit_speed) and write it")
    parser.add_argument("--on-cpu", default=None, metavar="NAME",
                        help="the CPU the --fit-speed sessions ran on, as "
                             "validate/host_probe.py's cpu_name gives it (default: this "
                             "host's); an entry may leave out the model: 'AMD EPYC (family 26)'")
    parser.add_argument("--models", type=Path, default=HERE.parent / "models",
                        help="where --fit-speed writes (default: the repository's models/)")
    parser.add_argument("--force", action="store_true",
                        help="let --fit-speed replace the CPU's existing line")
    args = parser.parse_args(argv)
    if args.reps < 1 or args.warm < 0:
        parser.error(f"--reps must be at least 1 and --warm at least 0; got --reps "
                     f"{args.reps}, --warm {args.warm}")
    try:
        if args.fit_speed:
            path = speed_model_path(args.models)
            cpu = args.on_cpu or cpu_name()
            if cpu in host_speed_lines(args.models) and not args.force:
                raise HarnessError(f"{path} has a line for {cpu}; pass --force to replace it")
            fitted, lines = fit_speed([read(d) for d in args.fit_speed])
            print("\n".join(lines))
            text, _ = with_speed_entry(path.read_text() if path.is_file() else None, cpu,
                                       speed_entry(cpu, fitted, args.fit_speed, lines))
            path.write_text(text)
            print(f"wrote {cpu}'s line into {path}")
            return
        if args.cpu:
            measured, model = measure_cpu(args.reps, args.warm), model_cpu()
            for rf in REPLICATIONS:
                print(f"replication {rf}: measured {np.median(measured[rf]):.3f} ms of CPU per "
                      f"message (runs: {', '.join(f'{x:.3f}' for x in measured[rf])}), "
                      f"model {model[rf]:.3f}")
            return
        runs = (read(args.out) if args.from_csv
                else measure(args.out, args.reps, warm_rounds=args.warm))
        rows, note = judge(runs)
        print(table(rows) + "\n" + note)
        speed = host_speed_model()
        print(speed_table(at_host_speed(runs, speed), speed))
    except HarnessError as exc:
        print(f"kafka_replication: error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
