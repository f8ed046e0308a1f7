"""kfin/kube.py's transport: credentials come from the client's refresh hook, but not on every request."""

from kfin.kube import Kube, Target
from tests.fakeapi.server import VIEWER_TOKEN


def test_credentials_are_refreshed_every_few_seconds_not_on_every_request(fake, fake_kubeconfig, monkeypatch):
    kube = Kube.connect(Target(str(fake_kubeconfig)))
    configuration = kube._api.configuration
    asked = []
    auth_settings = type(configuration).auth_settings
    monkeypatch.setattr(type(configuration), "auth_settings", lambda self: asked.append(1) or auth_settings(self))
    for _ in range(20):
        kube.request("GET", "/api/v1/namespaces")
    # Each call runs the kubeconfig loader's refresh hook, which re-applies the whole kubeconfig: ~1 ms.
    assert len(asked) <= 1
    assert {r.user for r in fake.requests[-20:]} == {"admin"}

    # Once the window has passed the hook runs again, and what it renews (an expiring token) is used.
    def renewing_hook(config):
        config.api_key["BearerToken"] = f"Bearer {VIEWER_TOKEN}"
    configuration.refresh_api_key_hook = renewing_hook
    monkeypatch.setattr(kube._api, "AUTH_REFRESH_SECONDS", 0)
    kube.request("GET", "/api/v1/namespaces")
    assert fake.requests[-1].user == "viewer"
