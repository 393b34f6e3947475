# Sourced (from the repository root) by the bench scripts that run nsys on the GPU machine: Debian's libdw1/libelf1,
# carried in bench/_work/deb, which nsys's importers need there, put on LD_LIBRARY_PATH; the nsys to run in $NSYS.
mkdir -p /tmp/dw && for f in bench/_work/deb/*.deb; do dpkg -x "$f" /tmp/dw; done
export LD_LIBRARY_PATH=/tmp/dw/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
