#!/usr/bin/env bash
# tools/packaging/make_manpage.sh MDNL — writes the man page mdnl(1) on stdout
# from the program's own help (`mdnl --help`, `mdnl COMMAND --help`), so that
# the page says what --help says. The build runs it (CMakeLists.txt: mdnl.1).
set -euo pipefail
mdnl=$1
# roff: a leading dot or quote would be a request; backslashes and dashes escaped.
esc() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
commands=$("$mdnl" --help | sed -n '/^commands:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
version=$("$mdnl" --version | awk '{print $2}')
cat <<HEAD
.TH MDNL 1 "" "mdnl $version" "User Commands"
.SH NAME
mdnl \\- neighbor lists, pair energies and RDFs of molecular\\-dynamics frames, on the CPU or a GPU
.SH SYNOPSIS
.B mdnl
.I COMMAND
[\\fIoptions\\fR]
.SH DESCRIPTION
.nf
HEAD
"$mdnl" --help | esc
echo ".fi"
echo ".SH COMMANDS"
for c in $commands; do
  echo ".SS mdnl $c"
  echo ".nf"
  "$mdnl" "$c" --help 2>&1 | esc
  echo ".fi"
done
cat <<'TAIL'
.SH EXIT STATUS
0 success; 1 internal error; 2 usage error; 3 bad input data; 4 out of host or device memory, or a device failure.
.SH LIBRARY
The same computations are callable from C through libmdnl (include \fBmdnl/mdnl.h\fR, link \fB\-lmdnl\fR, or
\fBfind_package(mdnl)\fR in CMake) and from Python through the \fBmdnl\fR package.
.SH SEE ALSO
The README, docs/reference.md and docs/library.md of the mdnl repository.
TAIL
