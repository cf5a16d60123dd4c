#!/usr/bin/env python3
"""Runs the commands of docs/deploy.md as written, against a throwaway install.

    scripts/check-deploy-doc.py [BINARY]      default $ENTITLED_BINARY, else .build/debug/entitled

Every fenced `sh` block of docs/deploy.md is run in order by bash (`set -e`), in a work folder
holding what the page says you have: the binary at .build/docker-equivalent/entitled,
deploy/entitled.service, an entitled.json made from examples/entitled.json with the page's `json`
settings, and entitled.env written from the page's environment-file block with fresh secrets.
What differs from a real machine, and only that:
- absolute paths (/etc, /usr/local/bin, /var/lib/entitled, /var/backups) live under a temporary
  root, and `localhost:8080` is a free port (8080 may be taken on a shared machine);
- `systemctl ... enable --now entitled` starts the server the way deploy/entitled.service does
  (its ExecStart, its EnvironmentFile as the only secrets, its WorkingDirectory), since systemd is
  not PID 1 here;
- commands that cannot run here are skipped, each with its reason (printed).
Commands run without the service's secrets in their environment unless the page loads them, so
`entitled backup` and `check` are checked as a cron job runs them. Exits 1 naming the first
command that failed.
"""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs/deploy.md"

# First words (or prefixes) of commands that cannot run here, with the reason.
SKIPPED = [
    (re.compile(r"^scripts/docker-equivalent-build\.sh"),
     "a release build takes minutes; scripts/check-deploy.sh runs its --check on the test build"),
    (re.compile(r"^docker "), "no Docker daemon here"),
    (re.compile(r"^journalctl "), "systemd is not PID 1 here (the server's output is read instead)"),
    (re.compile(r"^systemd-analyze verify "),
     "the installed unit's ExecStart is /usr/local/bin/entitled; scripts/check-deploy.sh verifies the unit "
     "with the build's path"),
    (re.compile(r"^curl .*entitled\.example\.com"), "needs a public HTTPS server, Apple and an In-App Purchase key"),
]


def fenced_blocks(text):
    """(language, lines) of every fenced block."""
    blocks, language, lines = [], None, []
    for line in text.splitlines():
        if language is None:
            match = re.match(r"^```(\w*)\s*$", line)
            if match:
                language, lines = match.group(1), []
        elif line.startswith("```"):
            blocks.append((language, lines))
            language = None
        else:
            lines.append(line)
    return blocks


def commands(lines):
    """Command lines of an sh block: continuations joined, comment-only lines dropped."""
    result, pending = [], ""
    for line in lines:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        result.append(pending + line)
        pending = ""
    return result


class Install:
    def __init__(self, binary):
        self.root = Path(tempfile.mkdtemp(prefix="entitled-deploy-doc."))
        self.work = self.root / "work"
        self.binary = binary
        self.port = free_port()
        self.server = None
        self.skipped = []
        self.ran = 0
        (self.work / ".build/docker-equivalent").mkdir(parents=True)
        os.symlink(binary, self.work / ".build/docker-equivalent/entitled")
        shutil.copytree(REPO / "deploy", self.work / "deploy")
        self.configuration = json.loads((REPO / "examples/entitled.json").read_text())
        self.configuration["listen"] = f"127.0.0.1:{self.port}"
        (self.root / "usr/local/bin").mkdir(parents=True)
        self.save()

    def save(self):
        (self.work / "entitled.json").write_text(json.dumps(self.configuration, indent=2))

    def local(self, text):
        """Absolute paths under the temporary root; the server's port."""
        for prefix in ("/etc/", "/usr/local/bin/", "/var/lib/entitled", "/var/backups"):
            text = re.sub(r"(?<![\w./-])" + re.escape(prefix), str(self.root) + prefix, text)
        return text.replace("localhost:8080", f"localhost:{self.port}")

    def environment_file(self, lines):
        """The page's environment file, with a fresh secret for every value it leaves to you."""
        out = [re.sub(r"=…$", "=" + secrets.token_hex(32), line) for line in lines]
        (self.work / "entitled.env").write_text("\n".join(out) + "\n")
        if not any(line.startswith("ENTITLED_V1_SHARED_SECRET=") for line in out):
            # The page: "Without it, remove the app's "sharedSecret" from the file."
            for app in self.configuration.get("apps", []):
                app.pop("sharedSecret", None)
        self.save()

    def settings(self, lines):
        """A block of JSON members the page tells you to put in the file."""
        members = json.loads(self.local("{" + "\n".join(lines).strip().rstrip(",") + "}"))
        if "listen" in members:
            members["listen"] = f"127.0.0.1:{self.port}"
        self.configuration.update(members)
        self.save()

    def run_block(self, lines):
        script = ["set -euo pipefail"]
        for command in commands(lines):
            reason = next((why for pattern, why in SKIPPED if pattern.search(command)), None)
            if reason:
                self.skipped.append((command, reason))
                continue
            if re.search(r"^systemctl .*enable --now entitled", command):
                script.append(f"# {command}")
                self.flush(script)
                script = ["set -euo pipefail"]
                self.start_server()
                continue
            if command.startswith("systemctl "):
                self.skipped.append((command, "systemd is not PID 1 here"))
                continue
            script.append(self.local(command))
        self.flush(script)

    def flush(self, script):
        if len(script) == 1:
            return
        environment = {key: value for key, value in os.environ.items() if not key.startswith("ENTITLED_")}
        environment["PATH"] = f"{self.root}/usr/local/bin:{environment.get('PATH', '/usr/bin:/bin')}"
        body = "\n".join(script)
        print("$ " + "\n$ ".join(script[1:]), flush=True)
        result = subprocess.run(["bash", "-c", body], cwd=self.work, env=environment, timeout=120)
        if result.returncode != 0:
            raise SystemExit(f"check-deploy-doc: docs/deploy.md's commands failed (status {result.returncode}):\n{body}")
        self.ran += len(script) - 1

    def start_server(self):
        """As deploy/entitled.service runs it: ExecStart, EnvironmentFile, WorkingDirectory."""
        unit = (self.root / "etc/systemd/system/entitled.service").read_text()
        directives = dict(re.findall(r"^(\w+)=(.*)$", unit, re.M))
        assert "Environment" not in directives, "the unit sets Environment=: the file should hold every setting"
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for line in Path(self.local(directives["EnvironmentFile"])).read_text().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.partition("=")
                environment[name] = value
        state = Path(self.local(directives["WorkingDirectory"]))
        state.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "server.log", "w")
        self.server = subprocess.Popen(
            self.local(directives["ExecStart"]).split(), cwd=state, env=environment, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.server.poll() is not None:
                raise SystemExit("check-deploy-doc: the server stopped:\n" + (self.root / "server.log").read_text())
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        print(f"(server started as the unit runs it, on port {self.port})", flush=True)
                        return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("check-deploy-doc: the server did not become ready")

    def close(self):
        if self.server and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            status = self.server.wait(timeout=30)
            if status != 0:
                raise SystemExit(f"check-deploy-doc: SIGTERM stopped the server with status {status}")
        log = self.root / "server.log"
        if log.exists():
            text = log.read_text()
            if '"setting replaced"' in text:
                raise SystemExit("check-deploy-doc: the environment replaced a setting of the file:\n" + text)
        shutil.rmtree(self.root, ignore_errors=True)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    default = os.environ.get("ENTITLED_BINARY") or REPO / ".build/debug/entitled"
    binary = Path(sys.argv[1] if len(sys.argv) > 1 else default).resolve()
    install = Install(binary)
    try:
        for language, lines in fenced_blocks(DOC.read_text()):
            if language == "json" and all(re.match(r'^\s*"(database|listen)"', line) for line in lines if line.strip()):
                install.settings(lines)
            elif language == "sh" and lines and lines[0].startswith("# /etc/entitled/entitled.env"):
                install.environment_file(lines)
            elif language == "sh":
                install.run_block(lines)
    finally:
        install.close()
    print(f"docs/deploy.md: {install.ran} command(s) run as written; skipped here:")
    for command, reason in install.skipped:
        print(f"  {command.split()[0]} …: {reason}")


if __name__ == "__main__":
    main()
