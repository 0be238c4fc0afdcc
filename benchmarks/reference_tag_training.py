"""Train the reference framework (rl-warp-drive 2.7.1, its own A2C trainer) on Tag continuous for a
wall-clock budget, saving its policies at given marks. Used by ``learning_side_by_side.py``.

The reference is a black box here: this file only drives its public trainer (``TrainerA2C``) and
wraps its per-iteration update call to read the clock. Its import name is also ``warp_drive``, so
it runs in its own process with the reference first on ``PYTHONPATH`` (see
``learning_side_by_side.py``). Usage::

    python reference_tag_training.py '<json: {"config": {...}, "marks": [30, 60, ...], "out": dir,
                                              "snapshot": "{mark}s_{tag}.state_dict"}>'

Writes ``<out>/<spec["snapshot"] with mark and tag>`` (the reference's own ``state_dict()``; 2.7.1's format)
and prints one ``RESULT {json}`` line: per mark, the elapsed seconds and env steps.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time


class _BudgetSpent(Exception):
    pass


def main(spec: dict) -> dict:
    import torch
    from example_envs.tag_continuous.tag_continuous import TagContinuous
    from warp_drive.env.env_wrapper import EnvWrapper
    from warp_drive.training.trainers.trainer_a2c import TrainerA2C

    logging.getLogger().setLevel(logging.ERROR)
    cfg, marks, out = spec["config"], sorted(spec["marks"]), spec["out"]
    num_envs = cfg["trainer"]["num_envs"]
    t0 = time.perf_counter()
    wrapper = EnvWrapper(TagContinuous(**cfg["env"]), num_envs=num_envs, env_backend="pycuda")
    pmap = {"tagger": list(wrapper.env.taggers), "runner": list(wrapper.env.runners)}
    trainer = TrainerA2C(env_wrapper=wrapper, config=cfg, policy_tag_to_agent_id_map=pmap,
                         results_dir=f"ref_{os.getpid()}", verbose=False)
    build_s = time.perf_counter() - t0
    batch = cfg["trainer"]["train_batch_size"]
    snapshots, pending, state = [], list(marks), {"iters": 0, "start": None}
    update = trainer._update_model_params  # the reference's per-iteration update

    def timed_update(iteration):
        metrics = update(iteration)  # the reference logs what its update returns
        state["iters"] += 1
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - state["start"]
        while pending and elapsed >= pending[0]:
            mark = pending.pop(0)
            os.makedirs(out, exist_ok=True)
            for tag, model in trainer.models.items():
                torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()},
                           os.path.join(out, spec["snapshot"].format(mark=mark, tag=tag)))
            snapshots.append({"mark_s": mark, "elapsed_s": round(elapsed, 2), "iterations": state["iters"],
                              "env_steps": state["iters"] * batch})
        if not pending:
            raise _BudgetSpent
        return metrics

    trainer._update_model_params = timed_update
    torch.cuda.synchronize()
    state["start"] = time.perf_counter()
    try:
        trainer.train()
    except _BudgetSpent:
        pass
    if pending:
        raise RuntimeError(f"the reference's run ended before the marks {pending} (raise num_episodes)")
    return {"build_s": round(build_s, 2), "snapshots": snapshots}


if __name__ == "__main__":
    result = main(json.loads(sys.argv[1]))
    print("RESULT " + json.dumps(result), flush=True)
