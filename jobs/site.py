"""The site file (jobs/site.env) and the environment sbatch needs to honour it.

#SBATCH lines cannot read a file, but sbatch reads SBATCH_ACCOUNT, SBATCH_PARTITION,
SBATCH_QOS and SBATCH_RESERVATION from its environment as if they were options (options given
on the command line still win). So the site file sets those variables, and submitting means:
read the file, export its non-empty SBATCH_* values and DLKIT_ROOT, run sbatch.
"""
from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

KIT_ROOT = Path(__file__).resolve().parents[1]
SITE_FILE_VARIABLE = "DLKIT_SITE_ENV"
# Variables a site file may set that matter at submit time (sbatch's own input variables).
SUBMIT_VARIABLES = ("SBATCH_ACCOUNT", "SBATCH_PARTITION", "SBATCH_QOS", "SBATCH_RESERVATION")


class SiteError(ValueError):
    """The site file is missing or bash cannot read it: one clear line, exit 2."""


def site_file(environ: Mapping[str, str], root: Path = KIT_ROOT) -> Path:
    """$DLKIT_SITE_ENV, else jobs/site.env under the kit."""
    return Path(environ.get(SITE_FILE_VARIABLE) or root / "jobs" / "site.env").resolve()


def read_site(path: Path) -> dict[str, str]:
    """The SBATCH_* and DLKIT_* values after bash has sourced the file (it is bash, not INI)."""
    if not path.is_file():
        raise SiteError(f"site file {path} not found (copy jobs/site.env.example to jobs/site.env)")
    dump = 'for v in ${!SBATCH_*} ${!DLKIT_*}; do printf "%s=%s\\0" "$v" "${!v}"; done'
    result = subprocess.run(["bash", "-c", f'source "$1" >/dev/null && {dump}', "site", str(path)],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        message = " ".join(result.stderr.split()) or f"exit code {result.returncode}"
        raise SiteError(f"cannot read site file {path}: {message}")
    pairs = (item.partition("=") for item in result.stdout.split("\0") if item)
    return {key: value for key, _, value in pairs}


def submit_environment(site: Mapping[str, str], environ: Mapping[str, str], site_path: Path,
                       root: Path = KIT_ROOT) -> dict[str, str]:
    """The environment for sbatch: the caller's, plus the site's non-empty SBATCH_* values.

    A value already exported by the caller wins over the file (a one-off `SBATCH_QOS=debug`),
    and an empty value is dropped: sbatch rejects `SBATCH_PARTITION=` as an invalid partition.
    """
    env = dict(environ)
    for name in SUBMIT_VARIABLES:
        value = site.get(name, "")
        if value and not env.get(name):
            env[name] = value
        elif not env.get(name):
            env.pop(name, None)
    env["DLKIT_ROOT"] = str(root)
    env[SITE_FILE_VARIABLE] = str(site_path)
    return env
