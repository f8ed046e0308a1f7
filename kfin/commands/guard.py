"""`kfin guard`: an admission webhook that tells whoever deletes what the deletion will leave stuck."""

from __future__ import annotations

import signal
import threading

import typer
from msgspec.structs import replace

from kfin.api.connection import Kube
from kfin.commands.flags import ChunkSizeOpt, ContextOpt, KubeconfigOpt, TimeoutOpt, duration_seconds, merged
from kfin.core.explain.watching import Watched
from kfin.core.predict.guard import CONTROL_PLANE_USERS, Guard
from kfin.errors import UsageError
from kfin.model import JSON
from kfin.serve import exporter
from kfin.serve.admission import AdmissionServer, Certificate, HeldCertificate, Reviews, admission_server
from kfin.serve.guard_tls import SelfSignedTLS, require_cryptography
from kfin.util.text import printable


def guard(
    ctx: typer.Context,
    listen: str = typer.Option(
        ":8443",
        "--listen",
        metavar="ADDR",
        help="Where to serve /validate, /metrics, /healthz and /readyz, as HOST:PORT or :PORT. A :PORT (the default "
        ":8443) listens on every interface of the machine; give HOST:PORT to listen on one address.",
    ),
    tls_cert_file: str = typer.Option(
        "", "--tls-cert-file", metavar="FILE", help="The serving certificate (PEM), read again when it changes."
    ),
    tls_private_key_file: str = typer.Option("", "--tls-private-key-file", metavar="FILE", help="Its key (PEM)."),
    plain_http: bool = typer.Option(
        False,
        "--plain-http",
        help="Serve /validate over plain HTTP, for a proxy in front that terminates TLS: kube-apiserver calls "
        "webhooks only over https, so without TLS flags kfin guard refuses to start.",
    ),
    self_signed: bool = typer.Option(
        False,
        "--self-signed",
        help="Make and rotate its own CA and serving certificate (for the Service's DNS names), kept in the Secret "
        "--tls-secret, and write the CA into the webhook configuration's caBundle (without cert-manager; needs the "
        "guard extra).",
    ),
    service_name: str = typer.Option(
        "kfin-guard", "--service-name", metavar="NAME", help="With --self-signed: the Service the certificate is for."
    ),
    service_namespace: str = typer.Option(
        "kfin-system",
        "--service-namespace",
        metavar="NAMESPACE",
        help="With --self-signed: its namespace, where the Secret is kept too.",
    ),
    tls_secret: str = typer.Option(
        "kfin-guard-ca",
        "--tls-secret",
        metavar="NAME",
        help="With --self-signed: the Secret kfin guard keeps its CA and certificate in (its own: created by it, "
        "shared by its replicas).",
    ),
    webhook_configuration: str = typer.Option(
        "kfin-guard",
        "--webhook-configuration",
        metavar="NAME",
        help="With --self-signed: the ValidatingWebhookConfiguration whose caBundle it writes.",
    ),
    tls_san: list[str] = typer.Option(
        [],
        "--tls-san",
        metavar="HOST",
        help="With --self-signed: another DNS name or IP address for the certificate (repeatable).",
    ),
    deny: bool = typer.Option(
        False,
        "--deny",
        help="Deny mode everywhere: refuse deletions predicted to leave objects nothing will release "
        "(otherwise only where the object or its namespace is labelled kfin.dev/guard=deny).",
    ),
    warn_only: bool = typer.Option(
        False,
        "--warn-only",
        help="Never deny: warn only, even where the label kfin.dev/guard=deny asks for deny mode (goes without "
        "--deny).",
    ),
    skip_user: list[str] = typer.Option(
        [],
        "--skip-user",
        metavar="USER",
        help="A user whose deletions are not reviewed (repeatable), besides the control plane's controllers.",
    ),
    metrics_listen: str = typer.Option(
        "",
        "--metrics-listen",
        metavar="ADDR",
        help="Also serve /metrics, /healthz and /readyz over plain HTTP there (for Prometheus), as HOST:PORT or :PORT.",
    ),
    interval: str = typer.Option(
        "60s", "--interval", metavar="DURATION", help="How long what explanations read on demand (Pods) is reused."
    ),
    chunk_size: ChunkSizeOpt = 500,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    request_timeout: TimeoutOpt = None,
) -> None:
    """An admission webhook that warns what a DELETE leaves stuck.

    Answers kube-apiserver's AdmissionReview v1 on POST /validate from a watch cache of the cluster (as kfin serve
    keeps one), with the same prediction as kfin preflight; it sends no dry run, and writes nothing but, with
    --self-signed, its own TLS: the Secret it keeps its CA in and its webhook configuration's caBundle. Deletions are
    allowed, with warnings; in deny mode (--deny, or the label kfin.dev/guard=deny on the object or its namespace,
    unless --warn-only) a deletion predicted to leave objects that nothing will release is refused, unless the
    object is annotated kfin.dev/allow-stuck-deletion=<why>. Install it with deploy/guard (failurePolicy Ignore:
    when the guard is down, deletions go on unguarded), or deploy/guard-self-signed without cert-manager.

    Examples:

      kfin guard --tls-cert-file /tls/tls.crt --tls-private-key-file /tls/tls.key     (cert-manager's certificate)

      kfin guard --self-signed     (its own CA, kept in the Secret kfin-system/kfin-guard-ca, and rotated)

      kfin guard --self-signed --tls-san 10.0.0.5 --listen 10.0.0.5:8443     (outside the cluster, called by URL)
    """
    options = merged(ctx, kubeconfig=kubeconfig, context=context, request_timeout=request_timeout)
    console = options.console
    every = duration_seconds(interval, "--interval")
    if every < 1:
        raise UsageError("--interval must be at least 1s")
    if warn_only and deny:
        raise UsageError("--warn-only never denies: it goes without --deny")
    if bool(tls_cert_file) != bool(tls_private_key_file):
        raise UsageError("--tls-cert-file and --tls-private-key-file go together")
    if self_signed and tls_cert_file:
        raise UsageError("--self-signed makes its own certificate: it goes without --tls-cert-file")
    if tls_san and not self_signed:
        raise UsageError("--tls-san goes with --self-signed")
    if plain_http and (self_signed or tls_cert_file):
        raise UsageError("--plain-http serves without TLS: it goes without --self-signed and --tls-cert-file")
    if not (plain_http or self_signed or tls_cert_file):
        raise UsageError(
            "kube-apiserver calls webhooks only over https: give --tls-cert-file and --tls-private-key-file, or "
            "--self-signed (or --plain-http behind a proxy that terminates TLS)"
        )
    if self_signed:
        require_cryptography()
    certificate: Certificate | HeldCertificate | None
    try:
        certificate = Certificate(tls_cert_file, tls_private_key_file) if tls_cert_file else None
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot read the serving certificate: {error}") from None
    options = replace(options, all_namespaces=True, namespace=None)
    scope = options.scope(contexts=[options.context] if options.context else [], chunk_size=chunk_size)
    for address in (listen, metrics_listen):  # a bad address is a usage error before anything is watched
        if address:
            exporter.parse_listen(address)
    kube = Kube.connect(options.target())  # a configuration that cannot work is an error now
    own_tls = None
    if self_signed:  # its own writes (a Secret, a caBundle): CREATE, UPDATE, PATCH, never what its webhook reviews
        names = [f"{service_name}.{service_namespace}.svc", f"{service_name}.{service_namespace}.svc.cluster.local"]
        own_tls = SelfSignedTLS(
            kube.bounded(30), service_namespace, tls_secret, webhook_configuration, [*names, *tls_san], console.log
        )
        held = HeldCertificate()
        material = own_tls.ensure()
        held.load(material.cert, material.key)
        certificate = held

    watched = Watched(scope, every)
    reviews = Reviews()
    judge = Guard(
        watched.facts, deny_everywhere=deny, skip_users=(*CONTROL_PLANE_USERS, *skip_user), warn_only=warn_only
    )

    def decide(request: JSON) -> tuple[JSON, str]:
        review = judge.review(request)
        if review.decision == "denied":
            what = f"{request.get('resource', {}).get('resource')} {request.get('name')}"
            console.log(f"denied: DELETE {printable(what, one_line=True)}")
        return review.answer(), review.decision

    def ready() -> bool:  # filled, every watch up (what the guard answers is a prediction), its own TLS kept
        return watched.filled() and not (own_tls and own_tls.problem)

    def answering() -> bool:  # ready, and the review server has room to answer: what /readyz of both servers says
        return ready() and servers[0].answering()

    servers: list[AdmissionServer] = []
    for address, tls in ((listen, certificate), (metrics_listen, None)):
        if not address:
            continue
        where, at = exporter.parse_listen(address)
        try:
            servers.append(admission_server(decide, answering, reviews, where, at, tls, console.log))
        except OSError as error:
            raise UsageError(f"cannot listen on {where}:{at}: {error.strerror or error}") from None
    server = servers[0]
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    scheme = "https" if certificate else "http"
    writes = f"; its TLS in Secret {service_namespace}/{tls_secret}" if self_signed else ", read-only"
    console.log(f"kfin guard: watching{writes}; reviews on {scheme}://{listen}/validate")
    watched.start()
    threading.Thread(target=watched.keep_facts, args=(stop,), daemon=True, name="kfin-facts").start()
    if own_tls is not None:
        serve = lambda material: held.load(material.cert, material.key)  # noqa: E731
        threading.Thread(target=own_tls.keep, args=(stop, serve), daemon=True, name="kfin-tls").start()
    for other in servers[1:]:
        console.log(f"kfin guard: metrics on http://{metrics_listen}/metrics")
        threading.Thread(target=other.serve_until, args=(stop,), daemon=True, name="kfin-metrics").start()
    try:
        server.serve_until(stop)
    finally:
        for each in servers:
            each.server_close()
        watched.stop()
    console.log("kfin guard: stopped")
