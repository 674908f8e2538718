#!/usr/bin/env bash
# VLMEvalKit in an environment of its own, .venv-vlmevalkit, for the VLMEvalKit end-to-end
# test (tests/harness/test_vlmevalkit_run.py runs the kit's run.py with this environment's
# python). VLMEvalKit is not on PyPI, so CI, which reaches only the package registries, cannot
# install it; on a machine with a checkout of github.com/open-compass/VLMEvalKit (tested at
# commit e8e78f0):
#
#   bash scripts/install-vlmevalkit.sh /path/to/VLMEvalKit
#
# Run it after the main .venv is made. The environment reads the main one's packages (CPU torch,
# transformers, mmconvert) through a .pth file, the checkout through another, and holds what
# `import vlmeval` and run.py's --config path need beyond them: the list below, found by
# importing run.py until it started, and xlsxwriter and openpyxl, with which the kit writes and
# reads its predictions file (without them it writes a .pkl beside the .xlsx it names). Not
# installed: torchvision. Every torchvision wheel on PyPI
# is built for its CUDA torch; pip would replace the CPU torch with a CUDA one (5.4 GB), and
# 0.28.0, the CPU torch's pair, stops at import ("operator torchvision::nms does not exist").
# The test's runner (tests/harness/vlmevalkit_run.py) explains how run.py starts without it.
set -euo pipefail
checkout=$(cd "${1:?the path of a VLMEvalKit checkout}" && pwd)
test -f "$checkout/run.py" -a -d "$checkout/vlmeval" || {
  echo "install-vlmevalkit.sh: $checkout holds no run.py and vlmeval/ (a VLMEvalKit checkout)" >&2
  exit 1
}
cd "$(dirname "$0")/.."
main=$(.venv/bin/python -c 'import site; print(site.getsitepackages()[0])')
python3 -m venv .venv-vlmevalkit
site=$(.venv-vlmevalkit/bin/python -c 'import site; print(site.getsitepackages()[0])')
echo "$checkout" > "$site/vlmevalkit-checkout.pth"
echo "import site; site.addsitedir('$main')" > "$site/zz-mmconvert-main.pth"
.venv-vlmevalkit/bin/pip install termcolor validators sty timeout-decorator Levenshtein decord \
  math-verify pylatexenc json_repair num2words accelerate qwen_vl_utils portalocker openpyxl xlsxwriter
echo "VLMEvalKit at $checkout, in .venv-vlmevalkit"
