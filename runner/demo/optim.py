"""AdamW for the LoRA parameters, written out so start-up stays fast.

``torch.optim`` imports ``torch._dynamo`` the first time a param group is added (about 1.2 s
on this machine, longer than the rest of start-up after ``import torch``). The update is
torch's single-tensor AdamW step, and ``state_dict()`` has torch's layout
(``{"state": {i: {"step", "exp_avg", "exp_avg_sq"}}, "param_groups": [...]}``), so optimizer.pt
reads like any HF checkpoint's."""
from __future__ import annotations

import math
from typing import Any

import torch


class AdamW:
    def __init__(self, params: list[torch.nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        self.params = list(params)
        self.group: dict[str, Any] = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                      "amsgrad": False, "maximize": False}
        self.state: dict[int, dict[str, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        """Zero every gradient, creating it if missing. An expert that no token was routed to
        gets no gradient from backward; keeping a zero one means every parameter is stepped
        the same way whether the run was resumed or not (and the all-reduce sees every grad)."""
        for p in self.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            else:
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        lr, (beta1, beta2) = self.group["lr"], self.group["betas"]
        eps, weight_decay = self.group["eps"], self.group["weight_decay"]
        for index, p in enumerate(self.params):
            if p.grad is None:
                continue
            state = self.state.get(index)
            if state is None:
                state = self.state[index] = {"step": torch.tensor(0.0),
                                             "exp_avg": torch.zeros_like(p),
                                             "exp_avg_sq": torch.zeros_like(p)}
            state["step"] += 1
            step = state["step"].item()
            if weight_decay:
                p.mul_(1 - lr * weight_decay)
            state["exp_avg"].lerp_(p.grad, 1 - beta1)
            state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            step_size = lr / (1 - beta1 ** step)
            denom = (state["exp_avg_sq"].sqrt() / math.sqrt(1 - beta2 ** step)).add_(eps)
            p.addcdiv_(state["exp_avg"], denom, value=-step_size)

    def state_dict(self) -> dict[str, Any]:
        return {"state": {i: {k: v.clone() for k, v in s.items()} for i, s in self.state.items()},
                "param_groups": [dict(self.group, params=list(range(len(self.params))))]}

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        """Restore the moments and step counts; ValueError if they do not fit these parameters."""
        groups = saved.get("param_groups") or []
        if len(groups) != 1 or len(groups[0].get("params", [])) != len(self.params):
            raise ValueError("optimizer state has a different number of parameters")
        state: dict[int, dict[str, torch.Tensor]] = {}
        for key, entry in (saved.get("state") or {}).items():
            index = int(key)
            if not 0 <= index < len(self.params):
                raise ValueError(f"optimizer state for unknown parameter {index}")
            p = self.params[index]
            for name in ("exp_avg", "exp_avg_sq"):
                if entry[name].shape != p.shape:
                    raise ValueError(f"optimizer {name} of parameter {index} has shape "
                                     f"{tuple(entry[name].shape)}, expected {tuple(p.shape)}")
            state[index] = {"step": torch.as_tensor(entry["step"], dtype=torch.float32).clone(),
                            "exp_avg": entry["exp_avg"].clone().to(p.dtype),
                            "exp_avg_sq": entry["exp_avg_sq"].clone().to(p.dtype)}
        self.state = state
        # The learning rate and betas come from the command line, as with HF's resume.
