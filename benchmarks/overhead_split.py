"""Where `profiling run`'s extra wall time goes, from PART=overhead's logs (benchmarks/issue34_gpu.sh).

Each pass gives: the whole command's seconds (overhead.txt), the script's own epochs (its "epoch N X.XXs"
lines) and, for a profiled pass, the script's process alone (meta.json's wall_seconds). So the extra
splits into the epochs (tracing, the timed turns), the script's process outside its epochs (kernprof,
the hooks, writing the .lprof) and the wrapper around it (start-up, the report).

    python benchmarks/overhead_split.py OUT
"""
import glob
import json
import re
import sys
from pathlib import Path


def epochs(log: Path) -> float:
    return sum(float(s) for s in re.findall(r"^epoch \d+ ([\d.]+)s", log.read_text(), re.M))


def main(out: Path) -> None:
    totals = {(how, int(n)): float(s) for how, n, s in
              re.findall(r"^(plain|profiled|old) pass (\d+): ([\d.]+) s", (out / "overhead.txt").read_text(), re.M)}
    print("pass  plain_s  profiled_s  ratio  epochs_plain  epochs_profiled  script_outside_epochs  wrapper_s")
    for n in sorted({n for _, n in totals}):
        plain, profiled = totals.get(("plain", n)), totals.get(("profiled", n))
        meta = glob.glob(str(out / f"overhead-{n}" / "*.meta.json"))
        child = json.loads(Path(meta[0]).read_text())["wall_seconds"] if meta else float("nan")
        ep_plain, ep_prof = epochs(out / f"overhead-plain-{n}.log"), epochs(out / f"overhead-profiled-{n}.log")
        if plain and profiled:
            print(f"{n:4d}  {plain:7.2f}  {profiled:10.2f}  {profiled / plain:5.3f}  {ep_plain:12.2f}  "
                  f"{ep_prof:15.2f}  {child - ep_prof:21.2f}  {profiled - child:9.2f}"
                  f"   (plain outside epochs {plain - ep_plain:.2f})"
                  + (f"   old: {old:.2f} s, {old / plain:.3f}" if (old := totals.get(("old", n))) else ""))
    runs = {how: sum(s for (h, _), s in totals.items() if h == how) for how, _ in totals}
    if runs.get("plain"):
        print("over all passes: " + ", ".join(f"{how} {total / runs['plain']:.3f}"
                                              for how, total in runs.items() if how != "plain"))


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "overhead.txt").is_file():
        print("usage: overhead_split.py OUT (the folder PART=overhead wrote, with its overhead.txt)", file=sys.stderr)
        sys.exit(2)
    main(Path(sys.argv[1]))
