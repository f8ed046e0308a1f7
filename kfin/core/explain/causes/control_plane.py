"""Finalizers of Kubernetes itself that kfin has no entry for (a newer release's, a component kfin does not
know): judged by whether the control plane is alive, reported UNKNOWN with that evidence, never ORPHANED."""

from __future__ import annotations

from kfin.core.explain.causes.registry import (
    CONTROLLER_MANAGER_LEASE,
    Context,
    Finding,
    Link,
    Verdict,
    controller_manager,
    explains,
    kfin_remove_command,
)
from kfin.model import MANAGERS


@explains("control-plane", reads=(CONTROLLER_MANAGER_LEASE,))
def control_plane(ctx: Context) -> Finding:
    alive, liveness = controller_manager(ctx.facts)
    manager = (ctx.obj.raw.get(MANAGERS) or {}).get(ctx.finalizer)
    evidence = [
        f"{ctx.finalizer} is in a Kubernetes-owned domain, and kfin has no entry for it (a newer release's, or "
        "a component kfin does not know)",
        liveness,
        f'managedFields: it was added by field manager "{manager}"'
        if manager
        else "managedFields name no field manager for it (or were not kept)",
    ]
    owner = f"{manager} (the field manager that added it)" if manager else "a Kubernetes control-plane component"
    return ctx.finding(
        "a control-plane finalizer kfin does not know: its component removes it once what it guards is gone",
        Verdict.UNKNOWN,
        fix=f"find what {owner} waits for (its logs; the object's conditions and events); "
        "bring kube-controller-manager back if it is down",
        risk="unknown: whatever the control plane guards with it (addresses, volumes, devices, a cloud resource) may "
        "still be in use, and removing it skips that cleanup",
        evidence=evidence,
        alive=alive,
        controller=owner,
        summary=f"{ctx.finalizer} (the control plane's; kfin does not know what it waits for)",
        remove_command=kfin_remove_command(ctx.obj, ctx.finalizer),
        links=[Link("controller", f"{owner} should remove it", actor=manager or "kube-controller-manager")],
    )
