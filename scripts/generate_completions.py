"""Write completions/kfin.{bash,zsh,fish,ps1} from the Typer app's own completion templates.

    python scripts/generate_completions.py [OUTPUT_DIR]

tests/commands/test_completion.py regenerates them and fails when the committed ones are out of date.
The scripts call back into kfin (through _KFIN_COMPLETE) for the dynamic part: kinds, names,
namespaces and contexts.
"""

import sys
from pathlib import Path

from typer._completion_shared import get_completion_script  # the templates `kfin --show-completion` prints

SHELLS = {"bash": "kfin.bash", "zsh": "kfin.zsh", "fish": "kfin.fish", "powershell": "kfin.ps1"}


def generate(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for shell, filename in SHELLS.items():
        path = out_dir / filename
        path.write_text(get_completion_script(prog_name="kfin", complete_var="_KFIN_COMPLETE", shell=shell) + "\n")
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "completions"
    for path in generate(target):
        print(f"wrote {path}")
