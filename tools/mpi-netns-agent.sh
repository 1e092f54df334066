#!/bin/sh
# Open MPI's plm_rsh_agent for ranks in network namespaces that stand in for hosts: called as
# `AGENT HOST COMMAND...` like ssh, it runs COMMAND in the namespace that owns HOST's address.
# ACCELTUNE_NETNS_HOSTS maps addresses to namespaces: "198.18.3.2=at-123-a 198.18.3.3=at-123-b".
host=$1
shift
for pair in $ACCELTUNE_NETNS_HOSTS; do
  if [ "${pair%%=*}" = "$host" ]; then
    # Like ssh, the command arrives as words for a shell to join and interpret.
    exec ip netns exec "${pair#*=}" /bin/sh -c "$*"
  fi
done
echo "mpi-netns-agent: no namespace for host '$host' in ACCELTUNE_NETNS_HOSTS" >&2
exit 255
