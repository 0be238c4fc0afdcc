"""The weights a run started from, kept to measure what training changed.

:class:`~warp_drive.training.run.trainer.Trainer` copies every policy's weights when it is built (after
any configured ``model_ckpt_filepath`` is loaded) and keeps the copy in its checkpoints
(:data:`STATE_KEY`), so a resumed run still has them. The end-of-run summary plays them against the
same fixed opponents and start states as the final weights
(:func:`~warp_drive.training.run.evaluation.evaluate`'s ``start_weights``): the "learned" line, a
number that rises as a policy learns, also in a game where its training return falls because the
other team learns too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from warp_drive.training.checkpoint_files import checkpoint_error

#: The key of the start weights in a trainer checkpoint.
STATE_KEY = "start_weights"

#: ``{tag: {role: state_dict}}``: each policy's weight-file modules (``policy.weight_files()``).
Weights = dict[str, dict[str, dict[str, torch.Tensor]]]


def policy_weights(policy: Any) -> dict[str, dict[str, torch.Tensor]]:
    """A detached copy of ``policy``'s weights, ``{role: state_dict}`` (its weight files' modules)."""
    from warp_drive.training.distributed import unwrap

    return {role: {k: v.detach().clone() for k, v in unwrap(m).state_dict().items()}
            for role, m in policy.weight_files().items()}


def capture(policies: Mapping[str, Any]) -> Weights:
    """``{tag: policy_weights(policy)}`` of every policy."""
    return {tag: policy_weights(p) for tag, p in policies.items()}


def same_as_current(policy: Any, weights: Mapping[str, Mapping[str, torch.Tensor]]) -> bool:
    """Whether ``policy`` holds exactly ``weights`` (nothing was learned since they were taken)."""
    now = policy_weights(policy)
    return now.keys() == weights.keys() and all(
        now[r].keys() == weights[r].keys() and all(torch.equal(now[r][k], weights[r][k].to(now[r][k].device))
                                                    for k in now[r]) for r in now)


@contextlib.contextmanager
def playing(policies: Mapping[str, Any], weights: Mapping[str, Mapping[str, Mapping[str, torch.Tensor]]]) -> Iterator[None]:
    """Inside, each policy named in ``weights`` holds those weights; on exit its own come back exactly
    (module ``load_state_dict`` of every weight-file role: no target-network or optimizer side effect)."""
    from warp_drive.training.distributed import unwrap

    saved = {tag: policy_weights(policies[tag]) for tag in weights}
    try:
        for tag, roles in weights.items():
            modules = policies[tag].weight_files()
            for role, state in roles.items():
                unwrap(modules[role]).load_state_dict(state)
        yield
    finally:
        for tag, roles in saved.items():
            modules = policies[tag].weight_files()
            for role, state in roles.items():
                unwrap(modules[role]).load_state_dict(state)


def from_checkpoint(entry: Any, policies: Mapping[str, Any], path: str | Path) -> Weights | None:
    """The start weights of a checkpoint entry, checked against the trainer's policies; None for a
    checkpoint without one (written before this entry existed).

    Raises:
        CheckpointError: the entry is not ``{tag: {role: {name: tensor}}}`` of exactly the policies' weights
            (tags, roles, names, shapes and dtypes, finite), naming the first field that differs.
    """
    if entry is None:
        return None
    out: Weights = {}

    def bad(field: str, why: str) -> CheckpointError:  # the wording and exit code (4) of the other checkpoint fields
        return checkpoint_error(f"checkpoint {str(path)!r}: `{STATE_KEY}{field}` {why} (not what a run writes: a "
                                "tampered or foreign file); resume from another checkpoint of the run, or start a new run",
                                "corrupt", Path(path))

    if not isinstance(entry, Mapping) or set(entry) != set(policies):
        raise bad("", f"must hold the weights of the policies {sorted(policies)}")
    for tag, policy in policies.items():
        current = policy_weights(policy)
        roles = entry[tag]
        if not isinstance(roles, Mapping) or set(roles) != set(current):
            raise bad(f".{tag}", f"must hold the weight roles {sorted(current)}")
        out[tag] = {}
        for role, now in current.items():
            state = roles[role]
            where = f".{tag}" + (f".{role}" if role else "")  # role "": the policy's model
            if not isinstance(state, Mapping) or set(state) != set(now):
                raise bad(where, "must hold the model's parameter and buffer names")
            for name, ref in now.items():
                value = state[name]
                if not isinstance(value, torch.Tensor) or value.shape != ref.shape or value.dtype != ref.dtype:
                    got = f"{type(value).__name__}" if not isinstance(value, torch.Tensor) else \
                        f"{value.dtype} {tuple(value.shape)}"
                    raise bad(f"{where}.{name}", f"is {got}, not the model's {ref.dtype} {tuple(ref.shape)}")
                if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                    raise bad(f"{where}.{name}", "holds NaN or infinite values")
            out[tag][role] = {k: v.detach().to(now[k].device) for k, v in state.items()}
    return out
