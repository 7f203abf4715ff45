"""The boundary between them: how a worker process is started (its Unix user, namespaces, cgroup, limits, pipes)
and how the privileged side touches what the kernel can write (by descriptor). stdlib only."""
