"""Log lines built with the format strings the trainers use (docs: /work/shared/formats.md),
so tests read what a real run would print. Values are chosen per test."""
from __future__ import annotations

import datetime as _dt
import json
import math


def _g4(x: float) -> str:
    """transformers 5.x ProgressCallback: every float as f"{v:.4g}"."""
    return f"{x:.4g}"


def swift_hf_dict(step: int, max_steps: int, loss: float, grad: float, lr: float = 2e-5,
                  mem: float | None = 35.12, speed: float = 6.2, strings: bool = True,
                  epoch: float = 0.05, old: bool = False) -> str:
    """ms-swift HF-trainer per-step dict. ``strings``: transformers 5.x (values as .4g
    strings, 'train_speed(s/it)'); ``old``: ms-swift 3.x (float values, 'percentage',
    'train_speed(iter/s)')."""
    if old:
        d = {"loss": round(loss, 8), "grad_norm": round(grad, 8), "learning_rate": lr, "token_acc": 0.7123,
             "epoch": epoch, "global_step/max_steps": f"{step}/{max_steps}",
             "percentage": f"{step / max_steps * 100:.2f}%", "elapsed_time": "1m 2s",
             "remaining_time": "19m 38s"}
        if mem is not None:
            d["memory(GiB)"] = mem
        d["train_speed(iter/s)"] = round(1 / speed, 6)
        return str(d)
    vals = {"loss": loss, "grad_norm": grad, "learning_rate": lr, "token_acc": 0.7123, "epoch": epoch}
    d = {k: (_g4(v) if strings else v) for k, v in vals.items()}
    d.update({"global_step/max_steps": f"{step}/{max_steps}", "elapsed_time": "1m 2s",
              "remaining_time": "19m 38s"})
    if mem is not None:
        d["memory(GiB)"] = _g4(mem) if strings else mem
    d["train_speed(s/it)"] = _g4(speed) if strings else speed
    return str(d)


def swift_megatron_dict(step: int, max_steps: int, loss: float, grad: float, lr: float = 2e-5,
                        mem: float = 35.12, speed: float = 6.2) -> str:
    """ms-swift 4.x Megatron PrintCallback dict (floats rounded to 8 places)."""
    return str({"loss": round(loss, 8), "grad_norm": round(grad, 8), "learning_rate": lr,
                "iteration": f"{step}/{max_steps}", "elapsed_time": "1m 2s", "remaining_time": "19m 38s",
                "memory(GiB)": mem, "train_speed(s/it)": speed})


def hf_dict(loss: float, grad: float, lr: float = 1.98e-5, epoch: float = 0.05, strings: bool = False) -> str:
    """Plain Hugging Face Trainer dict (4.57: floats; 5.x: .4g strings). No step in it."""
    if strings:
        return str({"loss": _g4(loss), "grad_norm": _g4(grad), "learning_rate": _g4(lr), "epoch": _g4(epoch)})
    return str({"loss": round(loss, 4), "grad_norm": grad, "learning_rate": lr, "epoch": round(epoch, 2)})


def megatron_line(step: int, train_iters: int, loss: float, grad: float | None, lr: float = 3e-5,
                  ms: float = 1834.6, new_ts: bool = True, samples: int | None = None) -> str:
    """Megatron-LM training_log line (HEAD pieces: timestamp, iteration, consumed samples,
    elapsed time, throughput, learning rate, batch size, lm loss, loss scale, grad norm,
    skipped, nan)."""
    now = _dt.datetime(2026, 1, 2, 3, 4, 5, 678901)
    ts = now.strftime("%Y-%m-%d %H:%M:%S.%f" if new_ts else "%Y-%m-%d %H:%M:%S")
    s = f" [{ts}]"
    s += " iteration {:8d}/{:8d} |".format(step, train_iters)
    s += " consumed samples: {:12d} |".format(samples if samples is not None else step * 64)
    s += " elapsed time per iteration (ms): {:.1f} |".format(ms)
    s += " throughput per GPU (TFLOP/s/GPU): {:.1f} |".format(412.3)
    s += " learning rate: {:.6E} |".format(lr)
    s += " global batch size: {:5d} |".format(64)
    s += " lm loss: {:.6E} |".format(loss)
    s += " loss scale: {:.1f} |".format(1.0)
    if grad is not None:
        s += " grad norm: {:.3f} |".format(grad)
    s += " number of skipped iterations: {:3d} |".format(0)
    s += " number of nan iterations: {:3d} |".format(0)
    return s


def megatron_swift3_line(step: int, train_iters: int, loss: float, grad: float, mem: float = 35.12) -> str:
    """ms-swift 3.x patched training_log: no microseconds, memory/elapsed/remaining added."""
    s = " [2025-11-02 03:04:05]"
    s += " iteration {:8d}/{:8d} |".format(step, train_iters)
    s += " consumed samples: {:12d} |".format(step * 16)
    s += " elapsed time per iteration (ms): {:.1f} |".format(6200.3)
    s += f" memory(GiB): {mem} | elapsed time: 1m 2s | remaining time: 19m 38s |"
    s += " learning rate: {:.6E} |".format(2e-5)
    s += " global batch size: {:5d} |".format(16)
    s += " lm loss: {:.6E} |".format(loss)
    s += " loss scale: {:.1f} |".format(1.0)
    s += " grad norm: {:.3f} |".format(grad)
    s += " number of skipped iterations: {:3d} |".format(0)
    s += " number of nan iterations: {:3d} |".format(0)
    return s


def memory_report(rank: int, step: int, max_reserved_mb: float, name: str | None = None) -> str:
    """Megatron report_memory line (values in MiB)."""
    s = f"{name or f'(after {step} iterations)'} memory (MB)"
    s += " | allocated: {:.2f}".format(20480.0)
    s += " | max allocated: {:.2f}".format(57344.0)
    s += " | reserved: {:.2f}".format(max_reserved_mb - 1024)
    s += " | max reserved: {:.2f}".format(max_reserved_mb)
    return "[Rank {}] {}".format(rank, s)


def kv_line(step: int, loss: float, grad: float, mem_gib: float, tps: float) -> str:
    return f"step: {step}  loss: {loss:.4f}  grad_norm: {grad:.4f}  memory: {mem_gib:.2f}GiB  tps: {tps:.0f}"


def nanogpt_line(step: int, total: int, loss: float, dt_ms: float, tok: int, gnorm: float) -> str:
    """nanochat-style step line (tok/sec with thousands separators)."""
    return (f"step {step:05d}/{total:05d} ({step / total * 100:.2f}%) | loss: {loss:.6f} | lrm: 1.00 | "
            f"dt: {dt_ms:.2f}ms | tok/sec: {tok:,} | mfu: 45.12 | gnorm: {gnorm:.4f} | total time: 1.23m")


def jsonl(obj: dict) -> str:
    return json.dumps(obj)


def bar(i: int, n: int, desc: str = "Train") -> str:
    """A tqdm bar as ms-swift's 'Train:' progress shows it."""
    pct = int(100 * i / n)
    filled = int(10 * i / n)
    return f"{desc}: {pct:3d}%|{'█' * filled}{' ' * (10 - filled)}| {i}/{n} [00:10<01:40,  5.12it/s]"


def tqdm_write(msg: str, i: int, n: int) -> str:
    """What tqdm.write leaves in a log: the bar, spaces clearing it, then the message."""
    b = bar(i, n)
    return f"\r{b}\r{' ' * len(b)}\r{msg}"


def same_record(a: dict, b: dict) -> bool:
    """Records equal, NaN equal to NaN."""
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, dict) and isinstance(y, dict):
            if not same_record(x, y):
                return False
        elif isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        elif x != y:
            return False
    return True


def parsed(parser, data: bytes, final: bool = True) -> tuple[list[dict], list[dict]]:
    """(records, marks) of ``data`` read by ``parser`` alone (``history.read_events``: no
    template); ``final``: the end of the log (the last line is read without its newline)."""
    from moeconsole.runner.ingest.history import read_events
    events = read_events(parser, [data], final)
    return [o for k, o in events if k == "record"], [o for k, o in events if k == "mark"]
