"""The widget operator of tests/scenarios/test_kopf_operator.py, written with kopf as its users write theirs, and run
by the real `kopf run` (`python -m kopf run --standalone -n NAMESPACE tests/kopf_operator.py`).

Its only handler is a deletion handler: kopf adds its finalizer (kopf.zalando.org/KopfFinalizerMarker) to every
Widget of KFIN_KOPF_GROUP it sees, runs `cleanup` when one is deleted and removes the finalizer once `cleanup`
returns. `cleanup` stands for a slow external clean-up (a bucket emptied, a database dropped): it says it began by
writing NAME.begun in KFIN_KOPF_RELEASE, and returns only once a file NAME exists there, so that a scenario knows the
clean-up runs and decides when it is done. It waits in the handler, as a clean-up in progress does, rather than
raising kopf.TemporaryError, which kopf logs as an error ("Handler 'cleanup' failed temporarily: ...") and keeps
in the handler's progress annotation (its message and retry count) until a retry succeeds."""

import asyncio
import os
from pathlib import Path

import kopf

GROUP = os.environ["KFIN_KOPF_GROUP"]
RELEASE = Path(os.environ["KFIN_KOPF_RELEASE"])


@kopf.on.delete(GROUP, "v1", "widgets")
async def cleanup(name: str, logger, **_) -> None:
    (RELEASE / f"{name}.begun").touch()
    while not (RELEASE / name).exists():
        await asyncio.sleep(0.1)
    logger.info(f"cleaned up after {name}")
