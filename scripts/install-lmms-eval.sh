#!/usr/bin/env bash
# lmms-eval 0.7.3 in an environment of its own, .venv-lmms-eval, for the lmms-eval harness test
# (tests/harness/test_lmms_eval_harness.py runs lmms-eval's CLI with this environment's python).
#
# Run it after the main .venv is made (README's test command does both). The new environment
# reads the main one's packages (CPU torch, mmconvert, lm-eval) through a .pth file, and holds
# lmms-eval and what lmms-eval needs beyond them, so nothing lmms-eval pins changes the main one.
#
# Two of lmms-eval's requirements are left out or capped, each on purpose:
# - torchvision: every torchvision wheel on PyPI needs its own torch build; pip would replace
#   the CPU torch with a CUDA one (gigabytes of nvidia packages). The openai model and the
#   tasks mmconvert writes import no torchvision. timm and qwen-vl-utils, which need it, are left
#   out with it.
# - filelock<4: lmms-eval 0.7.3's evaluator patches filelock's private module filelock._api
#   (_enable_reentrant_filelocks), which filelock 4 no longer has: every run stops with
#   ModuleNotFoundError. The main environment keeps its newer filelock.
# lmms-eval's other heavy extras (wandb, yt-dlp, sentence-transformers, audio and video) are not
# used by the openai model either.
set -euo pipefail
cd "$(dirname "$0")/.."
main=$(.venv/bin/python -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv .venv-lmms-eval
site=$(.venv-lmms-eval/bin/python -c 'import site; print(site.getsitepackages()[0])')
echo "import site; site.addsitedir('$main')" > "$site/zz-mmconvert-main.pth"
.venv-lmms-eval/bin/pip install --no-deps lmms-eval==0.7.3
.venv-lmms-eval/bin/pip install -r scripts/lmms-eval-requirements.txt
.venv-lmms-eval/bin/python -c 'import lmms_eval, mmconvert, torch; print("lmms-eval 0.7.3 with torch", torch.__version__)'
