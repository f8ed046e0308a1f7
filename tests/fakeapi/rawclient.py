"""A plain HTTP client for tests that speak to an API server directly (the fake or a real one)."""

import json
import ssl
import urllib.error
import urllib.request

JSON = "application/json"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


class RawClient:
    def __init__(self, url: str, token: str, ca_file: str | None = None, insecure: bool = False):
        self.url, self.token = url.rstrip("/"), token
        self._context = None
        if url.startswith("https"):
            self._context = ssl.create_default_context(cafile=ca_file)
            if insecure:
                self._context.check_hostname = False
                self._context.verify_mode = ssl.CERT_NONE

    def send(self, method, path, body=None, accept=JSON, content_type=None):
        """(status, parsed JSON or text)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type or JSON
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=30) as response:
                code, ctype, raw = response.status, response.headers.get("Content-Type", ""), response.read()
        except urllib.error.HTTPError as error:
            code, ctype, raw = error.code, error.headers.get("Content-Type", ""), error.read()
        text = raw.decode()
        return code, json.loads(text) if ctype.startswith(JSON) and text else text

    def ok(self, method, path, body=None, **kw):
        code, answer = self.send(method, path, body, **kw)
        if code >= 300:
            raise AssertionError(f"{method} {path}: {code} {answer}")
        return answer

    def get(self, path, **kw):
        return self.ok("GET", path, **kw)

    def create(self, path, body):
        return self.ok("POST", path, body)

    def json_patch(self, path, ops, dry_run=False):
        return self.send("PATCH", path + ("?dryRun=All" if dry_run else ""), ops,
                         content_type="application/json-patch+json")

    def merge_patch(self, path, patch):
        return self.send("PATCH", path, patch, content_type="application/merge-patch+json")

    def delete(self, path, propagation=None, grace=None):
        options = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            options["propagationPolicy"] = propagation
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        return self.send("DELETE", path, options)

    def delete_warned(self, path, dry_run: bool = False) -> tuple[int, object, list[str]]:
        """(status, answer, the Warning headers' texts) of a DELETE (kube-apiserver sends each as `299 - "text"`)."""
        options = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if dry_run:
            options["dryRun"] = ["All"]
        request = urllib.request.Request(self.url + path, data=json.dumps(options).encode(), method="DELETE",
                                         headers={"Authorization": f"Bearer {self.token}", "Accept": JSON,
                                                  "Content-Type": JSON})
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=30) as response:
                code, headers, raw = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            code, headers, raw = error.code, error.headers, error.read()
        warnings = []
        for header in headers.get_all("Warning") or []:
            header = header.encode("latin-1").decode()  # http.client reads header bytes as latin-1: they are UTF-8
            code_, agent, text = header.split(" ", 2)
            assert (code_, agent) == ("299", "-") and text.startswith('"') and text.endswith('"'), header
            warnings.append(text[1:-1].replace('\\"', '"').replace("\\\\", "\\"))
        return code, json.loads(raw) if raw else None, warnings

    def exists(self, path) -> bool:
        code, _ = self.send("GET", path)
        return code == 200
