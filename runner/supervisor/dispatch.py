"""The runner's control dispatch: one typed request in, one typed answer out.

``moeconsole.runner.supervisor.controlserver`` accepts, reads and expires clients and hands each parsed
``control.Request`` here; a request the parser refused (unknown command or field, wrong type)
never arrives. What this module decides is the answer and the refusals:

- ``status`` always answers, with the run's state;
- once the run is over and its runner only waits for the last checkpoint's sync, every command
  but ``verify`` is refused with the time left;
- ``kill``/``restart``/``resume`` go to the lifecycle (``moeconsole.runner.core.lifecycle``, through the
  ``steer`` callable the runner gives), whose reply is completed with the PIDs signalled;
- ``verify`` asks the checkpoint keeper; ``kill_pid`` starts a checked termination.

Everything it touches comes in as a callable, so the dispatcher is tested on plain data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.supervisor import control
from moeconsole.runner.telemetry.kill import KillResult, Termination


@dataclass(frozen=True)
class Steered:
    """What a lifecycle command did: the lifecycle's reply (None: nothing to do), the PIDs the
    SIGTERM went to, and the attempt's PIDs while a kill is under way (else empty)."""
    reply: dict[str, Any] | None
    signalled: list[int]
    stopping: list[int]


class Dispatcher:
    def __init__(self, *, state: Callable[[], dict[str, Any]], finishing_left: Callable[[], float | None],
                 steer: Callable[[lc.Control], Steered], verify: Callable[[], dict[str, Any]],
                 terminate: Callable[..., KillResult | Termination], grace: Callable[[Any], float],
                 choose: Callable[[str | None, str | None], str | None] = lambda which, by: None,
                 restore_choice: Callable[[Any], None] = lambda previous: None) -> None:
        """``state``: the run's state as ``status`` shows it; ``finishing_left``: seconds the
        runner still waits for the last sync once the run is over (None while it runs);
        ``terminate(pid, start_time, grace_s, requested_by=...)``: end a process outside the
        attempt; ``grace(asked)``: the kill grace for a requested value; ``choose(which, by)``: a restart's
        save to resume from (None clears an earlier choice), answering the refusal line or None;
        ``restore_choice(previous)``: puts back the choice state.json held before a restart that was refused."""
        self.state = state
        self.finishing_left = finishing_left
        self.steer = steer
        self.verify = verify
        self.terminate = terminate
        self.grace = grace
        self.choose = choose
        self.restore_choice = restore_choice

    def handle(self, req: control.Request) -> control.Answer:
        if isinstance(req, control.StatusRequest):
            return control.Answer(ok=True, state=self.state())
        left = self.finishing_left()
        if left is not None and not isinstance(req, control.Verify):
            status = self.state().get("status")
            most = f" (at most {left:.0f} s more)" if left >= 1 else ""   # records waiting for the disk: no bound
            return control.refusal(f"the run is over ({status}); its runner exits once its last records are written "
                                   f"and the last checkpoint's copy to persistent storage ends{most}: try {req.cmd} "
                                   "again then")
        if isinstance(req, (control.KillRequest, control.Restart, control.Resume)):
            return self._lifecycle(req)
        if isinstance(req, control.Verify):
            return control.answer_of(self.verify())
        return self._kill_pid(req)

    def _lifecycle(self, req: control.KillRequest | control.Restart | control.Resume) -> control.Answer:
        grace = req.grace_s if isinstance(req, control.KillRequest) and isinstance(req.grace_s, (int, float)) else None
        now = isinstance(req, control.Restart) and req.now is True
        previous = self.state().get("resume_choice")
        if isinstance(req, control.Restart):
            # the save asked for is checked before anything stops; a restart without one clears an earlier choice
            refused = self.choose(req.resume_from if isinstance(req.resume_from, str) else None, req.asker)
            if refused is not None:
                return control.refusal(refused)
        held = self.state().get("held")   # the training stopped (SIGSTOP, Ctrl-Z) as the kill came
        done = self.steer(lc.Control(req.cmd, grace_s=grace, now=now, by=req.asker))
        if isinstance(req, control.Restart) and not (done.reply or {}).get("ok"):
            # nothing restarts: this request's choice does not wait for a later one; an earlier one stays
            self.restore_choice(previous)
        if done.reply is None:
            status = self.state().get("status")
            return control.refusal(f"{req.cmd}: nothing to do while {status}")
        answer = control.answer_of(done.reply)
        if not isinstance(answer.pids, list):
            answer.pids = done.signalled or done.stopping
        if isinstance(req, control.KillRequest) and done.signalled:
            grace_s = answer.grace_s if isinstance(answer.grace_s, float) else 0.0
            # a stopped process holds a SIGTERM pending until it runs again: the tree is continued after it
            # (``proctree.CONTINUE_AFTER``), said, as the views had said it stopped (round 32)
            cont = (" and SIGCONT after it (the training was stopped: it takes the SIGTERM now)"
                    if isinstance(held, dict) and held.get("how") == "stopped" else "")
            answer.message = f"SIGTERM sent to {done.signalled}{cont}; SIGKILL in {grace_s:g}s for anything left"
        return answer

    def _kill_pid(self, req: control.KillPid) -> control.Answer:
        grace = self.grace(req.grace_s if isinstance(req.grace_s, (int, float)) else None)
        term = self.terminate(req.pid, req.start_time, grace, requested_by=req.asker)
        if isinstance(term, KillResult):
            return control.Answer(ok=term.ok, message=term.reason, result=term.to_dict())
        return control.Answer(ok=True, message=f"SIGTERM sent to PID {req.pid}; SIGKILL in {grace:g}s if it is still "
                                               f"there (the outcome is recorded as a blocker_kill event)",
                              result={"pid": req.pid, "ok": True, "action": "signalled", "reason": "under way",
                                      "seconds": 0.0})
