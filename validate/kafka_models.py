"""The Kafka calibration's models files, read: the local broker's CPU costs
(``models/kafka-broker-loopback.toml``, written by ``validate/calibrate_kafka.py``), the host
speed at which those costs hold and how a run's host speed is read from its probe, a line per
CPU (``models/kafka-host-speed-loopback.toml``, written by ``validate/kafka_replication.py``), and
a broker's costs carried from one host speed to another (:class:`HostSpeed`; the why is in
``validate/kafka_replication.py``'s docstring, "What the costs' speed holds").

The broker JVM's young pauses and Remark stops measured over several calibration sessions on
one CPU, a pool per CPU (``models/kafka-gc-loopback.toml``, written by
``validate/calibrate_kafka.py --gc-pool``: :class:`GcPool`).

The calibration, the replication suite, the record-cost design and the cold-start and thread
studies all read these files; each file's writer lives with the measurement that makes it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from validate.host_probe import cpu_name
from validate.kafka_harness import HarnessError

MODELS = Path(__file__).resolve().parent.parent / "models"
"""The repository's ``models/``, where the shipped files are."""


def broker_model_path(models_dir: Path) -> Path:
    """``models/kafka-broker-loopback.toml``: the local broker's CPU costs (only the local
    broker's CPU time is measured)."""
    return models_dir / "kafka-broker-loopback.toml"


def model_broker(models_dir: Path) -> dict | None:
    """The ``[broker]`` of :func:`broker_model_path` in ``models_dir``, if there is one; a
    file that is not TOML is refused, naming it."""
    path = broker_model_path(models_dir)
    return _read_toml(path).get("broker") if path.is_file() else None


SPEED_COSTS = ("request_cpu_us", "cold_us", "partition_fetch_us", "record_cpu_us",
               "follower_cold_us", "byte_cpu_ns")
"""The broker's CPU costs, scaled with the host's speed."""


def speed_model_path(models_dir: Path) -> Path:
    """``models/kafka-host-speed-loopback.toml``: how a run's host speed is read from its
    probe and at what speed the shipped broker costs hold
    (:func:`~validate.kafka_replication.fit_speed`)."""
    return models_dir / "kafka-host-speed-loopback.toml"


@dataclass(frozen=True)
class HostSpeed:
    """How fast the host ran a harness run, from its probe's wait lateness
    (``host_wake_s``, ``validate/host_probe.py``): the lateness beyond ``wake_floor_s``.
    ``costs_at_s``: the speed, so read, at which the broker's costs of
    ``models/kafka-broker-loopback.toml`` hold."""
    wake_floor_s: float
    costs_at_s: float

    def of(self, rec: np.ndarray) -> float:
        """A run's host speed (seconds, larger when slower; NaN without a probe)."""
        return float(rec["host_wake_s"][0]) - self.wake_floor_s

    def cpu_costs_at(self, runs: list[np.ndarray], factor: float) -> float:
        """The speed at which the broker's costs hold as its CPU time measures it: the median
        speed of ``runs`` (a calibration session's :data:`~validate.kafka_grid.CPU_FIT`
        runs) over ``factor``, what the shipped costs were scaled by to fit those runs' CPU
        (:func:`~validate.broker_costs.held_out_broker`); NaN without the probe's figures
        or a positive factor. Not :attr:`costs_at_s`, which is fitted on the acks (see
        ``validate/kafka_replication.py``'s docstring, "What the costs' speed holds")."""
        speeds = [s for s in map(self.of, runs) if np.isfinite(s)]
        if not speeds or not factor > 0:
            return float("nan")
        return float(np.median(speeds)) / factor

    def costs(self, broker: dict, speed_s: float) -> dict:
        """``broker`` (a ``[broker]`` table whose costs hold at :attr:`costs_at_s`) for a run
        at host speed ``speed_s`` (:func:`scaled_costs`)."""
        return scaled_costs(broker, self.costs_at_s, speed_s)


def scaled_costs(broker: dict, from_s: float, to_s: float) -> dict:
    """``broker`` with its CPU costs (:data:`SPEED_COSTS`), which hold at host speed
    ``from_s``, scaled to host speed ``to_s``: in step with the speed."""
    scale = to_s / from_s
    return {**broker, **{c: broker[c] * scale for c in SPEED_COSTS if c in broker}}


def host_speed_lines(models_dir: Path = MODELS) -> dict[str, HostSpeed]:
    """Every CPU's :class:`HostSpeed` in :func:`speed_model_path` of ``models_dir``, by the
    ``cpu`` of its ``[[host_speed]]`` entry ({} without a file): how a run's speed is read
    from its probe is a machine's (validate/kafka_replication.py's docstring, "One line per
    CPU"). A file that is not a list of such entries, an entry without its ``cpu`` or with
    one named twice, or a figure that is not a positive number is refused, naming the field,
    the value and the file."""
    path = speed_model_path(models_dir)
    return {cpu: _host_speed_of(entry, path, f"[[host_speed]] cpu = {cpu!r}:")
            for cpu, entry in _per_cpu(path, "host_speed", "its line was fitted on").items()}


def host_speed_model(models_dir: Path = MODELS, cpu: str | None = None) -> HostSpeed | None:
    """The :class:`HostSpeed` of :func:`speed_model_path` in ``models_dir`` for ``cpu``
    (default this host's, :func:`~validate.host_probe.cpu_name`; the entry matching it,
    :func:`same_cpu`), None without a file or an entry for it (:func:`no_speed_line` says
    which); refused as :func:`host_speed_lines`."""
    cpu = cpu_name() if cpu is None else cpu
    return next((s for key, s in host_speed_lines(models_dir).items() if same_cpu(key, cpu)),
                None)


def no_speed_line(models_dir: Path = MODELS) -> str:
    """Why :func:`host_speed_model` gives None on this host, and what writes its line."""
    path = speed_model_path(models_dir)
    what = (f"no line for this host's CPU ({cpu_name()}) in {path} (it has: "
            + ", ".join(host_speed_lines(models_dir)) + ")") if path.is_file() \
        else f"no host-speed file ({path})"
    return f"{what}: python -m validate.kafka_replication --fit-speed DIR ... adds it"


_CPU = re.compile(r"^(?P<name>.*?)(?: \(family (?P<family>\d+)(?:, model (?P<model>\d+))?\))?$")


def same_cpu(entry: str, cpu: str) -> bool:
    """Whether a ``[[host_speed]]`` entry's ``cpu`` (``AMD EPYC (family 26)``, or with its
    model: ``AMD EPYC (family 25, model 1)``) names ``cpu`` (:func:`cpu_name`'s form): the
    same model name and family, and the same model where the entry names one."""
    e, c = _CPU.match(entry), _CPU.match(cpu)
    assert e is not None and c is not None         # the pattern's every part is optional
    return (e["name"] == c["name"] and e["family"] == c["family"]
            and (e["model"] is None or e["model"] == c["model"]))


def broker_speed_model(models_dir: Path = MODELS) -> HostSpeed | None:
    """The host speed at which the broker's costs of ``models_dir``'s
    ``kafka-broker-loopback.toml`` hold by the broker JVM's CPU (its ``[host_speed]``, written
    by ``validate/calibrate_kafka.py`` from its ladder's runs or calibration sessions) on the
    CPU it names (``cpu``: its speed is read against that CPU's floor); None for a file
    without one (fitted before the host probe), one fitted on another CPU (a session then
    scales the costs on its own CPU fit runs: ``broker_costs.held_out_broker``) or no
    file. A table without its ``cpu`` is refused, and figures as :func:`host_speed_model`'s."""
    path = broker_model_path(models_dir)
    if not path.is_file():
        return None
    table = _read_toml(path).get("host_speed")
    if table is None:
        return None
    cpu = _cpu_of(table, path, "[host_speed]", "its speed was measured on")
    speed = _host_speed_of(table, path)
    return speed if same_cpu(cpu, cpu_name()) else None


def gc_pool_path(models_dir: Path) -> Path:
    """``models/kafka-gc-loopback.toml``: the broker JVM's young pauses and Remark stops
    measured on calibration sessions, a pool per CPU (:class:`GcPool`)."""
    return models_dir / "kafka-gc-loopback.toml"


@dataclass(frozen=True)
class GcPool:
    """The local broker JVM's young pauses and the Remark stops of its marking cycles (ms),
    every one measured (``jstat``) over the librdkafka runs of several calibration sessions on
    one CPU but the runs of the configuration those sessions judge held out
    (``validate/broker_gc.py``'s :func:`~validate.broker_gc.gc_pool`), and what they were
    measured on (``sessions``). A session holds a few collections; the model draws a pause's
    length from what it is given (``simbatch/kafka/gc.py``), and the pool gives it the
    machine's pauses, not a session's one or two (:func:`~validate.broker_gc.with_pool`)."""
    cpu: str
    pause_ms: tuple[float, ...]
    remark_ms: tuple[float, ...]
    sessions: str


def gc_pools(models_dir: Path = MODELS) -> dict[str, GcPool]:
    """Every CPU's :class:`GcPool` in :func:`gc_pool_path` of ``models_dir``, by its ``cpu``
    ({} without a file). A file that is not a list of ``[[pool]]`` entries, an entry without
    its ``cpu`` or with one named twice, pauses that are not a non-empty list of positive
    milliseconds or Remarks not a list of them, or no ``sessions`` saying what they were
    measured on, is refused, naming the field, the value and the file."""
    path = gc_pool_path(models_dir)
    out: dict[str, GcPool] = {}
    for cpu, entry in _per_cpu(path, "pool", "its pauses were measured on").items():
        where = f"[[pool]] cpu = {cpu!r}:"
        lists = []
        for field in ("pause_ms", "remark_ms"):
            value = entry.get(field, [] if field == "remark_ms" else None)
            if not isinstance(value, list) or (field == "pause_ms" and not value) or any(
                    isinstance(x, bool) or not isinstance(x, (int, float))
                    or not np.isfinite(x) or x <= 0 for x in value):
                raise HarnessError(f"{path}: {where} {field} must be a list of positive "
                                   f"milliseconds{'' if field == 'remark_ms' else ', not empty'}"
                                   f"; got {value!r}")
            lists.append(tuple(float(x) for x in value))
        sessions = entry.get("sessions")
        if not isinstance(sessions, str) or not sessions.strip():
            raise HarnessError(f"{path}: {where} sessions must say what the pauses were "
                               f"measured on; got {sessions!r}")
        out[cpu] = GcPool(cpu, lists[0], lists[1], sessions)
    return out


def gc_pool_model(models_dir: Path = MODELS, cpu: str | None = None) -> GcPool | None:
    """The :class:`GcPool` of :func:`gc_pool_path` in ``models_dir`` for ``cpu`` (default
    this host's, :func:`~validate.host_probe.cpu_name`; the entry matching it,
    :func:`same_cpu`), None without a file or an entry for it: pauses are the machine's.
    Refused as :func:`gc_pools`."""
    cpu = cpu_name() if cpu is None else cpu
    return next((p for key, p in gc_pools(models_dir).items() if same_cpu(key, cpu)), None)


def _per_cpu(path: Path, key: str, what: str) -> dict[str, dict]:
    """The ``[[key]]`` entries of the file at ``path`` by their ``cpu`` (the CPU ``what``
    says; {} without a file); a single ``[key]`` table, an entry without its ``cpu`` or a CPU
    named twice is refused, naming the file."""
    if not path.is_file():
        return {}
    entries = _read_toml(path).get(key, [])
    if not isinstance(entries, list):
        raise HarnessError(f"{path}: {key} must be one [[{key}]] entry per CPU, each naming "
                           f"its cpu; got a single [{key}] table")
    out: dict[str, dict] = {}
    for entry in entries:
        cpu = _cpu_of(entry, path, f"[[{key}]]", what)
        if cpu in out:
            raise HarnessError(f"{path}: [[{key}]] cpu {cpu!r} has two entries")
        out[cpu] = entry
    return out


def _cpu_of(table: object, path: Path, where: str, what: str) -> str:
    """The ``cpu`` of a ``[host_speed]`` table or entry (``where`` in ``path``), refused,
    naming them, unless it is a table naming a CPU (the one ``what`` says)."""
    cpu = table.get("cpu") if isinstance(table, dict) else None
    if not isinstance(cpu, str) or not cpu.strip():
        raise HarnessError(f"{path}: {where} cpu must name the CPU {what} (as "
                           f"validate/host_probe.py's cpu_name gives it); got {cpu!r}")
    return cpu


def _read_toml(path: Path) -> dict:
    """``path`` parsed; a file that is not TOML is refused, naming it."""
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(f"{path}: not TOML: {exc}") from None


def _host_speed_of(table: dict, path: Path, where: str = "[host_speed]") -> HostSpeed:
    """A ``[host_speed]`` table or entry (``where`` in ``path``, both named in the refusal)
    as a :class:`HostSpeed`."""
    values = []
    for field in ("wake_floor_us", "costs_at_us"):
        value = table.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not np.isfinite(value) or value <= 0:
            raise HarnessError(f"{path}: {where} {field} must be a positive number of "
                               f"microseconds; got {value!r}")
        values.append(value * 1e-6)
    return HostSpeed(*values)
