# Sourced by the benchmarks that run programs nobody here wrote (run_profile.sh, run_trace_apps.sh):
# HPCC and LAMMPS from Debian, their inputs, and which MPI a program uses. Neither package is in
# scripts/setup.sh (CI does not need them): ensure_package installs one when its command is missing.

# ensure_package PACKAGE COMMAND : installs the Debian package when its command is missing.
ensure_package() {
  command -v "$2" >/dev/null && return 0
  echo "bench: $2 missing: installing Debian's $1 (apt-get install -y $1)" >&2
  if ((EUID == 0)); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >&2; }
  else
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >&2
  fi
}

flavor_of() { # PROG -> openmpi | mpich (the MPI library it is linked to)
  if ldd "$1" | grep -q 'libmpich\.so'; then echo mpich; else echo openmpi; fi
}

hpcc_input() { # DIR : hpccinf.txt from the Debian example, N=HPCC_N, 1 x 2 process grid
  sed -e "s/^1000 *Ns/$HPCC_N         Ns/" -e 's/^2 *Ps/1            Ps/' \
    /usr/share/doc/hpcc/examples/_hpccinf.txt >"$1/hpccinf.txt"
  grep -q "^$HPCC_N " "$1/hpccinf.txt" && grep -q '^1 *Ps' "$1/hpccinf.txt"
}

lammps_input() { # DIR : a Lennard-Jones melt (LAMMPS's classic benchmark), LMP_BOX^3 fcc cells
  cat >"$1/in.melt" <<EOS
units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 $LMP_BOX 0 $LMP_BOX 0 $LMP_BOX
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 3.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every 20 delay 0 check no
fix             1 all nve
thermo          100
run             $LMP_STEPS
EOS
}
