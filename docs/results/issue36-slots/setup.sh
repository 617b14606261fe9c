# sourced on the GPU node from the repo root: wheels, unpacked Debian 12 sshfs/sshd/vmtouch, environment
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/deb && for f in .gpu36/*.deb; do dpkg -x "$f" /tmp/deb; done
export PATH=/tmp/deb/usr/bin:/tmp/deb/usr/sbin:/tmp/deb/bin:$PATH
export LD_LIBRARY_PATH=/tmp/deb/usr/lib/x86_64-linux-gnu:/tmp/deb/lib/x86_64-linux-gnu
export SMALL_FILES_SSHD=/tmp/deb/usr/sbin/sshd
mkdir -p /run/sshd && chmod 755 /run/sshd
id sshd >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd
