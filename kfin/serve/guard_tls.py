"""kfin guard's own TLS (`kfin guard --self-signed`): a CA and a serving certificate it makes, keeps in one Secret of
its own, writes into its webhook configuration's caBundle, and rotates.

    the Secret        one, by name (a GET of that name, never a list): created when absent, read when another replica
                      made it first (409 AlreadyExists), replaced when rotated under its resourceVersion (409 Conflict:
                      another replica rotated first, and its CA is read instead); so replicas share one CA
    the caBundle      the CAs a client must trust, written into every webhook of the ValidatingWebhookConfiguration by
                      a JSON Patch whose first operation tests the resourceVersion read (no lost update)
    its owner         the webhook configuration: deleting it deletes the Secret (the garbage collector), so an
                      uninstall leaves nothing of the guard behind
    rotation          the serving certificate is re-issued SERVING_RENEW_BEFORE its end; the CA is replaced
                      CA_RENEW_BEFORE its end, the old one kept in the caBundle until it expires, and the serving
                      certificate moves to the new CA only once the caBundle has carried it for CA_SETTLE

These writes are kfin guard's own (CREATE, UPDATE and PATCH, never a DELETE its webhook would review): the guard
never depends on a request its own configuration matches. Nothing secret is logged: a CA is named by its fingerprint.
The certificates are made with `cryptography` (the guard extra), imported only here and only when used.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from msgspec import Struct

from kfin.errors import APIError, ConfigError, KfinError, NotFoundError, UnreachableError
from kfin.model import JSON, ResourceType
from kfin.util.text import one_line

SECRETS = ResourceType("", "v1", "secrets", "Secret", True)
WEBHOOKS = ResourceType(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
)
MANAGED_BY = ("app.kubernetes.io/managed-by", "kfin-guard")  # the label that makes the Secret kfin guard's own

DAY = datetime.timedelta(days=1)
CA_VALIDITY = 365 * DAY
CA_RENEW_BEFORE = 90 * DAY  # well before: the old CA stays trusted beside the new one until it ends
CA_SETTLE = datetime.timedelta(minutes=10)  # the new CA in the caBundle for this long before serving with it
SERVING_VALIDITY = 30 * DAY
SERVING_RENEW_BEFORE = 10 * DAY
BACKDATE = datetime.timedelta(minutes=5)  # notBefore a little in the past: clocks differ between nodes
CHECK_EVERY = 60.0  # seconds between looks at the Secret and the caBundle (another replica may have rotated)
RETRY_FIRST = 5.0  # seconds before a failed look is tried again, doubled at each failure in a row up to CHECK_EVERY
KEYS = ("ca.crt", "ca.key", "tls.crt", "tls.key")

EXTRA_MISSING = "kfin guard --self-signed needs the cryptography package, an extra of kfin: pip install 'kfin[guard]'"


def require_cryptography() -> None:
    """ConfigError (one line) when the guard extra is not installed."""
    try:
        import cryptography.x509  # noqa: F401
    except ImportError:
        raise ConfigError(EXTRA_MISSING) from None


class Material(Struct, frozen=True):
    """What the Secret holds, as PEM: the CAs to trust (current first), the current CA's key, the serving pair."""

    ca_bundle: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    @property
    def ca_cert(self) -> bytes:
        return _pems(self.ca_bundle)[0]

    def fingerprint(self) -> str:
        return ca_fingerprint(self.ca_cert)


def _pems(bundle: bytes) -> list[bytes]:
    marker = b"-----END CERTIFICATE-----"
    return [part.strip() + b"\n" + marker + b"\n" for part in bundle.split(marker)[:-1]]


def ca_fingerprint(pem: bytes) -> str:
    """sha256:<first 16 hex digits> of the certificate's DER: names a CA in a log without anything secret."""
    from cryptography import x509

    der = x509.load_pem_x509_certificate(pem).public_bytes(_der())
    return "sha256:" + hashlib.sha256(der).hexdigest()[:16]


def _der() -> Any:  # cryptography's Encoding, imported lazily
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.DER


def _new_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    pem: bytes = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem


def make_ca(now: datetime.datetime, common_name: str = "kfin-guard-ca") -> tuple[bytes, bytes]:
    """(certificate, key) of a new CA, valid CA_VALIDITY from now."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # keyCertSign, cRLSign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def make_serving(ca_cert: bytes, ca_key: bytes, names: list[str], now: datetime.datetime) -> tuple[bytes, bytes]:
    """(certificate, key) for `names` (DNS names, or IP addresses), signed by the CA, valid SERVING_VALIDITY from
    now and never past the CA's own end."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca = x509.load_pem_x509_certificate(ca_cert)
    signer = serialization.load_pem_private_key(ca_key, None)
    key = _new_key()
    sans: list[x509.GeneralName] = []
    for name in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + SERVING_VALIDITY, ca.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def sans_of(cert: bytes) -> list[str]:
    """The serving certificate's subject alternative names, as text."""
    from cryptography import x509

    extension = x509.load_pem_x509_certificate(cert).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return [str(name.value) for name in extension.value]


def decide(material: Material | None, names: list[str], now: datetime.datetime) -> tuple[str, str]:
    """(what to do, why): "create" (no CA yet, or it has ended), "new-ca" (the CA ends within CA_RENEW_BEFORE),
    "reissue" (the serving certificate has ended or ends within SERVING_RENEW_BEFORE, names other hosts, or is signed
    by a CA other than the current one that has been in the caBundle for CA_SETTLE), "prune" (a previous CA has
    expired: out of the caBundle), or "keep"."""
    from cryptography import x509

    if material is None:
        return "create", "no CA yet"
    cas = [x509.load_pem_x509_certificate(pem) for pem in _pems(material.ca_bundle)]
    ca, serving = cas[0], x509.load_pem_x509_certificate(material.cert)
    if ca.not_valid_after_utc <= now:  # nothing it signed is trusted any more: nothing to keep trusted beside a new CA
        return "create", f"the CA ended {ca.not_valid_after_utc:%Y-%m-%d}"
    if ca.not_valid_after_utc - now <= CA_RENEW_BEFORE:
        return "new-ca", f"the CA ends {ca.not_valid_after_utc:%Y-%m-%d}"
    if serving.not_valid_after_utc <= now:  # no client accepts it: re-issued at once, settled or not
        return "reissue", f"the serving certificate ended {serving.not_valid_after_utc:%Y-%m-%d %H:%M}Z"
    if serving.issuer != ca.subject or _authority_key(serving) != _subject_key(ca):
        if now - (ca.not_valid_before_utc + BACKDATE) >= CA_SETTLE:
            return "reissue", "the serving certificate is signed by the previous CA"
    elif serving.not_valid_after_utc - now <= SERVING_RENEW_BEFORE:
        return "reissue", f"the serving certificate ends {serving.not_valid_after_utc:%Y-%m-%d %H:%M}Z"
    elif sorted(sans_of(material.cert)) != sorted(names):
        return "reissue", "the serving certificate names other hosts"
    if any(old.not_valid_after_utc <= now for old in cas[1:]):
        return "prune", "a previous CA has expired"
    return "keep", ""


def _subject_key(cert: Any) -> bytes:
    from cryptography import x509

    try:
        digest: bytes = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
        return digest
    except x509.ExtensionNotFound:
        return b""


def _authority_key(cert: Any) -> bytes:
    from cryptography import x509

    try:
        return cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier or b""
    except x509.ExtensionNotFound:
        return b""


def renewed(material: Material | None, action: str, names: list[str], now: datetime.datetime) -> Material:
    """The material after `action` (decide's): a new CA keeps the current one in the caBundle (and the serving
    certificate it signed) until the new one has settled; expired CAs leave the caBundle."""
    from cryptography import x509

    if material is None or action == "create":
        ca_cert, ca_key = make_ca(now)
        return Material(ca_cert, ca_key, *make_serving(ca_cert, ca_key, names, now))
    live = [pem for pem in _pems(material.ca_bundle) if x509.load_pem_x509_certificate(pem).not_valid_after_utc > now]
    if action == "new-ca":
        ca_cert, ca_key = make_ca(now)
        return Material(ca_cert + b"".join(live), ca_key, material.cert, material.key)
    bundle = b"".join(live) if live else material.ca_cert
    if action == "reissue":
        return Material(bundle, material.ca_key, *make_serving(material.ca_cert, material.ca_key, names, now))
    return Material(bundle, material.ca_key, material.cert, material.key)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _from_secret(secret: JSON, now: datetime.datetime) -> Material:
    """The Secret's material, checked as kfin guard uses it; ConfigError saying what is wrong (never its content)."""
    data = secret.get("data")
    if not isinstance(data, dict):
        raise ConfigError("it has no data" if data is None else "its data is not an object")
    values = []
    for key in KEYS:
        value = data.get(key)
        if value is None:
            raise ConfigError(f"it has no {key}")
        if not isinstance(value, str):
            raise ConfigError(f"its {key} is not a string")
        try:
            values.append(base64.b64decode(value, validate=True))
        except ValueError:
            raise ConfigError(f"its {key} is not base64") from None
    material = Material(*values)
    problem = material_problem(material, now)
    if problem:
        raise ConfigError(problem)
    return material


def material_problem(material: Material, now: datetime.datetime) -> str:
    """What makes `material` unusable as kfin guard uses it ("" when nothing): each PEM readable, the CA a CA, each
    key the key of its certificate and one kfin can sign with, and a serving certificate still valid signed by one
    of the CAs its clients are given. An ended CA or serving certificate, or other names, are kfin's to rotate."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    def certificates(pem: bytes, key: str) -> list[x509.Certificate]:
        parts = _pems(pem)
        if not parts:
            raise _UnusableError(f"its {key} holds no PEM certificate")
        try:
            return [x509.load_pem_x509_certificate(part) for part in parts]
        except ValueError:
            raise _UnusableError(f"its {key} holds a certificate that cannot be read") from None

    def private_key(pem: bytes, key: str) -> Any:
        try:
            loaded = load_pem_private_key(pem, None)
        except (ValueError, TypeError, UnsupportedAlgorithm):  # TypeError: encrypted, and no password
            raise _UnusableError(f"its {key} is not a PEM private key without a password") from None
        if not isinstance(loaded, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise _UnusableError(f"its {key} is neither an EC nor an RSA key (kfin signs with SHA-256)")
        return loaded

    def public(thing: Any) -> bytes:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        spki: bytes = thing.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
        return spki

    try:
        cas = certificates(material.ca_bundle, "ca.crt")
        served = certificates(material.cert, "tls.crt")
        ca_key, key = private_key(material.ca_key, "ca.key"), private_key(material.key, "tls.key")
        try:
            constraints = cas[0].extensions.get_extension_for_class(x509.BasicConstraints).value
        except x509.ExtensionNotFound:
            constraints = None
        if constraints is None or not constraints.ca:
            raise _UnusableError("the first certificate of its ca.crt is not a CA")
        if public(ca_key) != public(cas[0]):
            raise _UnusableError("its ca.key is not the key of the CA in its ca.crt")
        if len(served) != 1:
            raise _UnusableError("its tls.crt holds more than one certificate")
        if public(key) != public(served[0]):
            raise _UnusableError("its tls.key is not the key of the certificate in its tls.crt")
        if served[0].not_valid_after_utc > now:  # an ended one is re-issued whoever signed it
            for ca in cas:
                try:
                    served[0].verify_directly_issued_by(ca)
                    break
                except (ValueError, TypeError, InvalidSignature):
                    continue
            else:
                raise _UnusableError("its tls.crt is not signed by a CA of its ca.crt")
    except _UnusableError as unusable:
        return str(unusable)
    return ""


class ObjectStore(Protocol):
    """What the guard's TLS reads and writes of the cluster (kfin.api's Kube is one): the Secret by name and the
    webhook configuration's caBundle, handed in so that serving the guard never builds a request itself."""

    def read_object(self, rtype: ResourceType, namespace: str | None, name: str) -> JSON: ...

    def read_object_or_none(self, rtype: ResourceType, namespace: str | None, name: str) -> JSON | None: ...

    def patch_object(self, rtype: ResourceType, namespace: str | None, name: str, operations: list[JSON]) -> Any: ...

    def create_object(self, rtype: ResourceType, namespace: str | None, body: JSON) -> JSON: ...

    def replace_object(self, rtype: ResourceType, namespace: str | None, name: str, body: JSON) -> JSON: ...


class _UnusableError(Exception):
    """What is wrong with the material, said as the end of "the Secret NAME ..."."""


class SelfSignedTLS:
    """The CA and serving certificate of kfin guard, kept in the Secret `namespace/secret`, their CAs written into the
    ValidatingWebhookConfiguration `webhook_configuration`."""

    def __init__(
        self,
        kube: ObjectStore,
        namespace: str,
        secret: str,
        webhook_configuration: str,
        names: list[str],
        log: Callable[[str], None],
        clock: Callable[[], float] = time.time,
    ):
        self.kube, self.namespace, self.secret, self.configuration = kube, namespace, secret, webhook_configuration
        self.names, self.log, self.clock = names, log, clock
        self.material: Material | None = None
        self.served: Material | None = None  # what `keep` last handed to its `serve`
        self.problem = ""  # why the certificate cannot be kept now ("" while it can): kfin guard is not ready
        self.passing = ""  # why the last look failed, when the server was only away for now: said once
        self._failures = 0  # failed looks in a row

    def _now(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.clock(), datetime.UTC)

    def _read(self) -> tuple[Material | None, JSON | None]:
        """The Secret's material and the Secret (None, None when it does not exist): a GET of its name alone."""
        secret = self.kube.read_object_or_none(SECRETS, self.namespace, self.secret)
        if secret is None:
            return None, None
        labels = (secret.get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_BY[0]) != MANAGED_BY[1]:
            raise ConfigError(
                f"the Secret {self.namespace}/{self.secret} is not kfin guard's (no label {MANAGED_BY[0]}="
                f"{MANAGED_BY[1]}): kfin guard --self-signed keeps its CA in a Secret of its own (--tls-secret)"
            )
        try:
            return _from_secret(secret, self._now()), secret
        except ConfigError as error:  # a person may have put it there: refused, never replaced
            where = f"{self.namespace}/{self.secret}"
            raise ConfigError(
                f"the Secret {where} (labelled {MANAGED_BY[0]}={MANAGED_BY[1]}) cannot be used: {error.message}; "
                f"kfin guard does not replace it: delete it (kubectl delete secret -n {self.namespace} {self.secret}) "
                "and kfin guard makes a new CA and certificate and writes the CA into the caBundle"
            ) from None

    def _owners(self, secret: JSON | None) -> list[JSON]:
        """The Secret's owner: the webhook configuration whose caBundle it fills, so that deleting that configuration
        (helm uninstall, kubectl delete -k, both delete it first) has the garbage collector delete the Secret too,
        and nothing of the guard is left behind. Kept as it is once set; none while the configuration is absent."""
        kept = ((secret or {}).get("metadata") or {}).get("ownerReferences")
        if kept:
            return list(kept)
        config = self.kube.read_object_or_none(WEBHOOKS, None, self.configuration)
        uid = ((config or {}).get("metadata") or {}).get("uid")
        if not uid:
            return []
        return [{"apiVersion": f"{WEBHOOKS.group}/{WEBHOOKS.version}", "kind": WEBHOOKS.kind,
                 "name": self.configuration, "uid": uid}]  # fmt: skip

    def _body(self, material: Material, secret: JSON | None) -> JSON:
        metadata: JSON = {"name": self.secret, "namespace": self.namespace, "labels": dict([MANAGED_BY])}
        resource_version = ((secret or {}).get("metadata") or {}).get("resourceVersion")
        if resource_version:
            metadata["resourceVersion"] = resource_version
        owners = self._owners(secret)
        if owners:
            metadata["ownerReferences"] = owners
        data = {"ca.crt": material.ca_bundle, "ca.key": material.ca_key, "tls.crt": material.cert,
                "tls.key": material.key}  # fmt: skip
        return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "kubernetes.io/tls",
                "data": {k: _b64(v) for k, v in data.items()}}  # fmt: skip

    def ensure(self) -> Material:
        """The material to serve with: the Secret's, created or rotated first when it has to be. Replicas racing
        each other: whoever writes second finds the first's work (409) and reads it again."""
        for _ in range(5):
            material, secret = self._read()
            action, why = decide(material, self.names, self._now())
            if action == "keep":
                self.material = material
                return material  # type: ignore[return-value]
            new = renewed(material, action, self.names, self._now())
            try:
                if secret is None:
                    self.kube.create_object(SECRETS, self.namespace, self._body(new, None))
                else:
                    self.kube.replace_object(SECRETS, self.namespace, self.secret, self._body(new, secret))
            except NotFoundError as error:
                if error.kind == "namespaces":  # the Service's namespace, where the Secret is kept, does not exist
                    raise NotFoundError(
                        f"namespace {self.namespace} not found: kfin guard --self-signed keeps its Secret "
                        f"{self.secret} in its Service's namespace (--service-namespace)",
                        error.kind,
                        error.name,
                    ) from None
                raise
            except APIError as error:
                if error.status == 409:  # another replica wrote it first: read what it wrote
                    continue
                raise
            self.log(f"kfin guard: {_ACTIONS[action]} ({why}): CA {new.fingerprint()} in Secret "
                     f"{self.namespace}/{self.secret}")  # fmt: skip
            self.material = new
            return new
        raise ConfigError(f"the Secret {self.namespace}/{self.secret} kept changing while kfin guard wrote it")

    def publish(self, material: Material) -> bool:
        """Write the caBundle into every webhook of the configuration that lacks it; True when it is there. A
        JSON Patch: its first operation tests the resourceVersion read, so a concurrent change is never lost."""
        bundle = _b64(material.ca_bundle)
        try:
            config = self.kube.read_object(WEBHOOKS, None, self.configuration)
        except NotFoundError:
            self.log(f"kfin guard: no ValidatingWebhookConfiguration {self.configuration} yet: its caBundle waits")
            return False
        hooks = config.get("webhooks") or []
        stale = [i for i, hook in enumerate(hooks) if (hook.get("clientConfig") or {}).get("caBundle") != bundle]
        if not stale:
            return True
        version = (config.get("metadata") or {}).get("resourceVersion")
        operations: list[JSON] = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}]
        operations += [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle} for i in stale]
        try:
            self.kube.patch_object(WEBHOOKS, None, self.configuration, operations)
        except APIError as error:
            if error.status in (409, 422):  # changed since read (the test failed): again at the next look
                return False
            raise
        self.log(f"kfin guard: caBundle of ValidatingWebhookConfiguration {self.configuration} written "
                 f"(CA {material.fingerprint()})")  # fmt: skip
        return True

    def keep(self, stop: threading.Event, serve: Callable[[Material], None], every: float | None = None) -> None:
        """Until `stop`: a `look` every `every` seconds (CHECK_EVERY), sooner after a failed one. Nothing ends it
        but `stop`: a failure is logged, is `problem` (not ready) meanwhile, and is tried again. What `ensure`
        returned before is taken as served already."""
        self.served = self.served or self.material
        while not stop.wait(self.look(serve, CHECK_EVERY if every is None else every)):
            pass

    def look(self, serve: Callable[[Material], None], every: float = CHECK_EVERY) -> float:
        """One look at the Secret and the caBundle: a changed serving pair is handed to `serve`. Seconds until the
        next: `every`; RETRY_FIRST while the caBundle could not be written; after a failure RETRY_FIRST doubled at
        each failure in a row, at most `every`. Until the Secret is good again the last good pair goes on serving."""
        try:
            material = self.ensure()
            if self.served is None or (material.cert, material.key) != (self.served.cert, self.served.key):
                serve(material)
                self.served = material
            published = self.publish(material)
        except Exception as error:  # the keeper must outlive anything: said, and tried again
            self._failures += 1
            why = error.message if isinstance(error, KfinError) else f"internal error in kfin: {error!r}"
            problem = one_line(why)
            retry = float(min(every, RETRY_FIRST * 2 ** min(self._failures - 1, 16)))
            if self.served is not None and self._passing(error, self.served):
                if problem != self.passing:  # the server is away for now: what is served still holds, reviews go on
                    self.log(f"kfin guard: could not look at its TLS: {problem}; the certificate it serves still "
                             f"holds (it ends {_end(self.served.cert)}), trying again")  # fmt: skip
                self.passing = problem
                return retry
            if problem != self.problem:  # said once, not at every retry
                until = f" (it ends {_end(self.served.cert)})" if self.served else ""
                self.log(f"kfin guard: not ready: its TLS could not be kept: {problem}; serving the last good "
                         f"certificate{until}, trying again")  # fmt: skip
            self.problem = problem
            return retry
        if self.problem:
            self.log(f"kfin guard: ready again: its TLS is kept (CA {material.fingerprint()} in Secret "
                     f"{self.namespace}/{self.secret})")  # fmt: skip
        self.problem, self.passing, self._failures = "", "", 0
        return every if published else min(every, RETRY_FIRST)

    def _passing(self, error: Exception, served: Material) -> bool:
        """An API server that cannot be reached or answers 5xx for now, while the served certificate is still
        valid: that is no reason to stop answering reviews (not ready takes the guard out of its Service). A
        Secret it cannot use, anything else, or a served certificate that ended is."""
        from cryptography import x509

        away = isinstance(error, UnreachableError) or (isinstance(error, APIError) and error.status >= 500)
        return away and bool(x509.load_pem_x509_certificate(served.cert).not_valid_after_utc > self._now())


def _end(cert: bytes) -> str:
    from cryptography import x509

    return f"{x509.load_pem_x509_certificate(cert).not_valid_after_utc:%Y-%m-%d %H:%M}Z"


_ACTIONS = {"create": "new CA and serving certificate", "new-ca": "new CA (the previous one stays trusted)",
            "reissue": "serving certificate re-issued", "prune": "expired CA out of the caBundle"}  # fmt: skip
