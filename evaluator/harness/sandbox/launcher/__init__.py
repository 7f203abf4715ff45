"""The launcher: the only part of the harness that keeps root, and as little as that takes (OpenSSH's privilege
separation, Chromium's broker). stdlib only; no json, no torch, nothing of the orchestrator or the workers
(tests/harness/test_launcher.py holds it to a line budget and to that list of imports).

    runner (app's user) --START, descriptors--> zygote (root) --fork--> launcher (root, one per evaluation)
                                                                          |-- orchestrator (uid O, no capability)
                                                                          |-- reference worker (uid O)
                                                                          `-- candidate worker (uid K, bwrap)

What it does, and all it does: lease the evaluation's two uids, make its mount and network namespaces, mount the
kernel's size-capped disks, make its folders through descriptors (layout.py), start the orchestrator as uid O with
an empty bounding set and no_new_privs (process.py), and answer the orchestrator's fixed requests (wire.py): a worker
pair (pair.py: the reference as O, the candidate as K in its sandbox, each in a cgroup; their pipe ends and pidfds
handed over), how a worker ended, kill a worker, end a pair (counting what the kernel left running), the kernel's
build folder as a descriptor (emptied by moving its entries aside, never by a walk), pin the pair onto one CPU.
Anything else, malformed or out of place, is refused. It never parses a worker's output, never copies a file the
kernel wrote and never writes the record: those are the orchestrator's, which holds no privilege. At the end it
kills and reaps every process of the evaluation, frees the uids and removes its folders; the kernel's disks go with
its mount namespace.
"""
