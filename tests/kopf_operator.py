"""The widget operator of tests/scenarios/test_kopf_operator.py, written with kopf as its users write theirs, and run
by the real `kopf run` (`python -m kopf run --standalone -n NAMESPACE tests/kopf_operator.py`).

Its only handler is a deletion handler: kopf adds its finalizer (kopf.zalando.org/KopfFinalizerMarker) to every
Widget of KFIN_KOPF_GROUP it sees, runs `cleanup` when one is deleted and removes the finalizer once `cleanup`
returns. `cleanup` stands for a slow external clean-up (a bucket emptied, a database dropped), steered by files in
KFIN_KOPF_RELEASE, so that a scenario knows it runs and decides how it ends: it writes NAME.begun when it begins, and
returns once a file NAME exists. While a file NAME.failing exists, it fails as operators do when they cannot finish:
it raises kopf.TemporaryError with that file's text, which kopf logs as an error ("Handler 'cleanup' failed
temporarily: ...") and keeps in the handler's progress annotation (its message and retry count), retrying a second
later. Otherwise it waits in the handler, as a clean-up in progress does."""

import asyncio
import os
from pathlib import Path

import kopf

GROUP = os.environ["KFIN_KOPF_GROUP"]
RELEASE = Path(os.environ["KFIN_KOPF_RELEASE"])


@kopf.on.delete(GROUP, "v1", "widgets")
async def cleanup(name: str, logger, **_) -> None:
    (RELEASE / f"{name}.begun").touch()
    failing = RELEASE / f"{name}.failing"
    while not (RELEASE / name).exists():
        if failing.exists():
            raise kopf.TemporaryError(failing.read_text(), delay=1)
        await asyncio.sleep(0.1)
    logger.info(f"cleaned up after {name}")
