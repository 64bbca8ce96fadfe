#!/bin/sh
# Installs the Debian packages of docker/build-packages.txt that the build stage's base lacks. On the base
# `make images` bootstraps they are all present and nothing is downloaded; on a plain debian:bookworm
# (a Docker user's build) apt installs them.
set -eu
list="$(dirname "$0")/build-packages.txt"
missing=""
for pkg in $(sed 's/#.*//' "$list"); do
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] || missing="$missing $pkg"
done
if [ -z "$missing" ]; then
  echo "build packages: all present"
  exit 0
fi
echo "build packages: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086 # one word per package
apt-get install -y -q --no-install-recommends $missing
rm -rf /var/lib/apt/lists/*
