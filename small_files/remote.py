"""Serve a local folder back to ourselves over sshfs, to stand in for a cluster's network file system.

A home or project directory on a cluster is NFS, Lustre or GPFS: every open and every stat is a
round trip to a server. This machine has FUSE but no NFS, so the same pattern comes from sshfs
to 127.0.0.1: each file open is SFTP requests over an encrypted TCP connection. Numbers differ
from a real cluster; the shape (per-file costs dominate many small files) is the same.

Everything lives in one temporary folder: a private sshd (its own host key, config, port and pid
file, listening on 127.0.0.1 only), a client key, a pinned known_hosts and the mount point. The
system's sshd, /etc/ssh and ~/.ssh are never read or written. Needs root (sshd logs in as the
user that runs it, here root with a key only) and /run/sshd, sshd's privilege-separation folder,
which `make system-deps` creates.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SSHD = os.environ.get("SMALL_FILES_SSHD", "/usr/sbin/sshd")  # another place: an unpacked .deb on a bare node
# The stand-in's server runs on the job's own node, so its encryption is a cost a real file server
# would not put there. AES-GCM runs on the CPU's AES instructions: on an H100 node, at 26,000 images/s
# of shards, it took ssh and sshd from 0.65 and 0.87 cores (ChaCha20-Poly1305, ssh's default; the one
# sshd session process then capped the loop) to 0.27 and 0.52 (docs/small-files.md).
CIPHER = "Ciphers=aes128-gcm@openssh.com"
PRIVSEP_DIR = Path("/run/sshd")


class SshfsUnavailable(RuntimeError):
    """sshfs, sshd or what they need is missing: one line saying what to install."""


def missing_tools() -> str | None:
    """Why an sshfs mount cannot be made here, or None."""
    for tool in ("sshfs", "fusermount3", "ssh-keygen", "ssh"):
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian: sshfs, fuse3, openssh-client; `make system-deps`)"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} not found (Debian: openssh-server; `make system-deps`)"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing: this kernel or container has no FUSE"
    if os.geteuid() != 0:
        return "the loopback sshd needs root (it logs in as the user that runs it)"
    if not PRIVSEP_DIR.is_dir():
        return f"{PRIVSEP_DIR} is missing (sshd's privilege-separation folder; `make system-deps` creates it)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise SshfsUnavailable(f"{cmd[0]} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")


def _sshd_config(d: Path, port: int) -> str:
    return "\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {d / 'host_key'}", f"PidFile {d / 'sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no", "Subsystem sftp internal-sftp", "LogLevel ERROR", ""])


def _stop(pidfile: Path) -> None:
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)


def _wait_until_gone(private: Path, limit: float = 10.0) -> None:
    """Wait for the sshfs client's ssh and the sshd session to exit (they close a moment after
    the unmount), so that nothing started here outlives the mount."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        alive = False
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                alive = str(private).encode() in (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if alive:
                break
        if not alive:
            return
        time.sleep(0.05)


def _is_mounted(path: Path) -> bool:
    return any(line.split()[1] == str(path) for line in Path("/proc/self/mounts").read_text().splitlines())


@contextlib.contextmanager
def sshfs_mount(served: Path, options: str = "") -> Iterator[Path]:
    """Mount SERVED over sshfs to 127.0.0.1 on a fresh mount point; yield the mount point.

    A fresh mount has empty sshfs and FUSE caches, so together with `cache.evict(served)` it
    gives a cold read. On exit the mount is removed, the sshd stopped and the folder deleted.
    `options` are more sshfs -o options; the cipher is AES-GCM unless they name one.
    """
    problem = missing_tools()
    if problem is not None:
        raise SshfsUnavailable(problem)
    served = served.resolve()
    with tempfile.TemporaryDirectory(prefix="dlkit-sshfs-") as tmp:
        d = Path(tmp)
        os.chmod(d, 0o700)
        mount = d / "mnt"
        mount.mkdir()
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host_key"))
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "client_key"))
        shutil.copy(d / "client_key.pub", d / "authorized_keys")
        port = _free_port()
        (d / "sshd_config").write_text(_sshd_config(d, port))
        host_key = (d / "host_key.pub").read_text().split()[:2]
        (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_key)}\n")
        try:
            _run(SSHD, "-f", str(d / "sshd_config"), "-E", str(d / "sshd.log"))
            ssh_opts = (f"port={port},IdentityFile={d / 'client_key'},UserKnownHostsFile={d / 'known_hosts'},"
                        "StrictHostKeyChecking=yes,BatchMode=yes,IdentitiesOnly=yes"
                        + ("" if "Ciphers=" in options else f",{CIPHER}"))
            deadline = time.monotonic() + 10
            while True:  # sshd daemonises before it listens
                try:
                    _run("sshfs", f"root@127.0.0.1:{served}", str(mount), "-o",
                         ssh_opts + (f",{options}" if options else ""))
                    break
                except SshfsUnavailable:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            yield mount
        finally:
            if _is_mounted(mount):
                subprocess.run(["fusermount3", "-u", str(mount)], capture_output=True, timeout=60, check=False)
            _stop(d / "sshd.pid")
            _wait_until_gone(d)
