#!/usr/bin/env bash
# System packages the tests need (Debian/Ubuntu): Tesseract OCR with the traineddata of every
# script mmconvert draws (English, Traditional and Simplified Chinese, Arabic, Persian, Urdu,
# Hebrew, Hindi, Bengali, Tamil, Thai, Greek, Russian: mmconvert qa check reads each item with
# the languages of its scripts), Chromium, in which the review page is tested, its headless
# shell, which the document renderer prints with, and the GL and GLib libraries that
# Augraphy's opencv-python loads.
# Idempotent; uses sudo when not run as root. On other systems install Tesseract with your
# package manager (macOS: brew install tesseract tesseract-lang) and point MMCONVERT_CHROMIUM
# at a Chromium or Chrome binary.
set -euo pipefail
packages=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-tra tesseract-ocr-chi-sim
          tesseract-ocr-ara tesseract-ocr-fas tesseract-ocr-urd tesseract-ocr-heb tesseract-ocr-hin
          tesseract-ocr-ben tesseract-ocr-tam tesseract-ocr-tha tesseract-ocr-ell tesseract-ocr-rus
          chromium chromium-headless-shell libgl1 libglib2.0-0)
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-debian.sh: no apt-get here; install: ${packages[*]}" >&2
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
