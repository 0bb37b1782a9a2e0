"""docker-compose.yml and its nginx configuration.

Docker cannot run here, so ``docker compose config`` runs only where docker is
installed; the file's structure is checked always. The nginx configuration
(deploy/nginx/tokserve.conf) runs for real when nginx is installed (Debian: ``apt-get
install nginx``): in front of two tokserve processes on 127.0.0.2 and 127.0.0.3, with a
small DNS server of this test standing in for Docker's, it must

* pass the caller's X-Request-ID through unchanged, and add one only when there is none;
* re-resolve the service name, so a replica added after start ("--scale") gets traffic.
"""

from __future__ import annotations

import re
import shutil
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from servers import ServerProcess, free_port

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
NGINX_CONF = REPO / "deploy" / "nginx" / "tokserve.conf"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_config_validates_where_docker_is_installed():
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed (the structure test below runs instead)")
    plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True,
                            timeout=60)
    if plugin.returncode != 0:
        pytest.skip(f"no docker compose plugin here: {plugin.stderr.strip()[:200]}")
    done = subprocess.run(["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_compose_file_structure(compose):
    assert set(compose["services"]) == {"tokserve", "lb"}
    app, lb = compose["services"]["tokserve"], compose["services"]["lb"]
    assert "container_name" not in app and "ports" not in app  # scalable: no fixed names
    assert app["deploy"]["replicas"] >= 2
    probe = " ".join(app["healthcheck"]["test"])
    assert "/readyz" in probe and "/healthz" not in probe
    env = app["environment"]
    drain = float(env["TOKSERVE_DRAIN_SECONDS"]) + float(env["TOKSERVE_GRACEFUL_TIMEOUT"])
    assert _seconds(app["stop_grace_period"]) > drain
    assert app["read_only"] is True and "/tmp" in app["tmpfs"]
    assert lb["depends_on"]["tokserve"]["condition"] == "service_healthy"
    mounts = {m.split(":")[1]: m.split(":")[0] for m in lb["volumes"]}
    assert (REPO / mounts["/etc/nginx/conf.d/default.conf"]).resolve() == NGINX_CONF
    for volume in app["volumes"]:
        assert (REPO / volume.split(":")[0]).exists(), volume
    assert (REPO / app["build"] / "Dockerfile").is_file()
    readme = (REPO / "README.md").read_text()
    assert re.search(r"Docker Compose v2\.\d+", readme), "README states the Compose version"


def test_nginx_config_resolves_per_request_and_keeps_the_callers_id():
    conf = NGINX_CONF.read_text()
    assert re.search(r"^resolver 127\.0\.0\.11 valid=\d+s", conf, re.M)
    assert re.search(r"set \$tokserve tokserve:8000;", conf)
    assert "proxy_pass http://$tokserve;" in conf
    assert not re.search(r"^\s*upstream\s", conf, re.M)  # resolved once at start
    assert "proxy_set_header X-Request-ID $tokserve_request_id;" in conf


def _seconds(value: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(s|m)", value).groups()
    return float(number) * (60 if unit == "m" else 1)


# ==== a real nginx =====================================================================


class FakeDns:
    """A DNS server on 127.0.0.1 answering A queries for one name from ``addresses``
    (TTL 1 s), NXDOMAIN for anything else. Enough for nginx's resolver."""

    def __init__(self, name: str, addresses: list[str]) -> None:
        self.name, self.addresses = name, list(addresses)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.queries = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                query, peer = self.sock.recvfrom(512)
            except OSError:
                return
            self.queries += 1
            self.sock.sendto(self._answer(query), peer)

    def _answer(self, query: bytes) -> bytes:
        ident = query[:2]
        end, labels = 12, []
        while query[end]:
            labels.append(query[end + 1:end + 1 + query[end]].decode())
            end += 1 + query[end]
        question = query[12:end + 5]  # name, its 0 byte, qtype, qclass
        qtype = struct.unpack("!H", query[end + 1:end + 3])[0]
        known = ".".join(labels).lower() == self.name
        answers = [a for a in self.addresses] if known and qtype == 1 else []
        flags = 0x8180 if known else 0x8183  # response, recursion available; NXDOMAIN
        out = ident + struct.pack("!HHHHH", flags, 1, len(answers), 0, 0) + question
        for address in answers:
            out += struct.pack("!HHHIH", 0xC00C, 1, 1, 1, 4) + socket.inet_aton(address)
        return out

    def close(self) -> None:
        self.sock.close()


def _nginx_conf(tmp: Path, dns_port: int, backend_port: int, lb_port: int) -> Path:
    """deploy/nginx/tokserve.conf as it is, with the resolver, the service's port and
    the listen address of this machine instead of Docker's, inside a main config."""
    conf = NGINX_CONF.read_text()
    conf = conf.replace("resolver 127.0.0.11 valid=5s", f"resolver 127.0.0.1:{dns_port} valid=1s")
    conf = conf.replace("tokserve:8000", f"tokserve:{backend_port}")
    conf = conf.replace("listen 80;", f"listen 127.0.0.1:{lb_port};")
    (tmp / "tokserve.conf").write_text(conf)
    main = tmp / "nginx.conf"
    main.write_text(f"""
        daemon off;
        worker_processes 1;
        pid {tmp}/nginx.pid;
        error_log {tmp}/error.log warn;
        events {{ worker_connections 256; }}
        http {{
            access_log off;
            client_body_temp_path {tmp}/body;
            proxy_temp_path {tmp}/proxy;
            fastcgi_temp_path {tmp}/fastcgi;
            uwsgi_temp_path {tmp}/uwsgi;
            scgi_temp_path {tmp}/scgi;
            include {tmp}/tokserve.conf;
        }}
    """)
    return main


def _served(url: str) -> float:
    """Requests to /count a backend has served, from its own /metrics."""
    text = httpx.get(url + "/metrics", timeout=10).text
    match = re.search(r'tokserve_requests_total\{endpoint="/count",method="POST",'
                      r'status="200"\} (\S+)', text)
    return float(match.group(1)) if match else 0.0


def test_nginx_passes_request_ids_and_finds_replicas_added_later(tmp_path):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    if nginx is None:
        pytest.skip("nginx is not installed (apt-get install nginx)")
    try:
        with socket.create_server(("127.0.0.2", 0)):
            pass
    except OSError:
        pytest.skip("cannot bind 127.0.0.2 (loopback aliases unavailable)")
    port = free_port()
    dns = FakeDns("tokserve", ["127.0.0.2"])
    lb_port = free_port()
    main = _nginx_conf(tmp_path, dns.port, port, lb_port)
    with ServerProcess(host="127.0.0.2", port=port) as a, \
            ServerProcess(host="127.0.0.3", port=port) as b:
        proc = subprocess.Popen([nginx, "-p", str(tmp_path), "-c", str(main)],
                                stderr=subprocess.PIPE, text=True)
        try:
            lb = httpx.Client(base_url=f"http://127.0.0.1:{lb_port}", timeout=10)
            deadline = time.monotonic() + 30
            while True:
                try:
                    if lb.get("/readyz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, (tmp_path / "error.log").read_text()
                time.sleep(0.1)

            # the caller's id, unchanged, in the header and the error body
            r = lb.post("/count", json={"text": "<|endoftext|>"},
                        headers={"X-Request-ID": "gateway-7f3a"})
            assert r.status_code == 400 and r.headers["x-request-id"] == "gateway-7f3a"
            assert r.json()["error"]["request_id"] == "gateway-7f3a"
            # none sent: nginx makes one (32 hex), tokserve keeps it
            r = lb.post("/count", json={"text": "hello"})
            assert r.status_code == 200 and re.fullmatch(r"[0-9a-f]{32}",
                                                         r.headers["x-request-id"])

            # one replica known: all traffic to it
            for _ in range(20):
                assert lb.post("/count", json={"text": "one"}).status_code == 200
            assert _served(b.url) == 0 and _served(a.url) >= 21
            # "docker compose up --scale": the name now has two addresses
            dns.addresses = ["127.0.0.2", "127.0.0.3"]
            deadline = time.monotonic() + 30
            while _served(b.url) == 0:
                assert time.monotonic() < deadline, "nginx never sent to the new replica"
                assert lb.post("/count", json={"text": "two"}).status_code == 200
                time.sleep(0.05)
            before = _served(a.url), _served(b.url)
            for _ in range(40):
                assert lb.post("/count", json={"text": "both"}).status_code == 200
            after = _served(a.url), _served(b.url)
            assert after[0] > before[0] and after[1] > before[1]  # round robin over both
            lb.close()
        finally:
            proc.terminate()
            proc.wait(10)
            dns.close()
