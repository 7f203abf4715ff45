"""The worker side: the two torch processes of an evaluation. The reference worker never imports candidate code;
the candidate worker is the only process that does, inside the sandbox. Nothing here imports the orchestrator."""
