"""Every statement `pgmem doctor` (:mod:`pgmem.cli.doctor`) runs, by name.

The checks themselves are ``pgmem.doctor()`` (sql/functions/75_doctor.sql); these
statements only ask the server who and what it is, and call that function.
"""

from __future__ import annotations

from typing import Final

SERVER: Final = """
select pg_catalog.current_setting('server_version') as version,
       pg_catalog.current_database() as database,
       current_user as role,
       pg_catalog.to_regprocedure('pgmem.doctor(text, integer, interval)') is not null
           as has_doctor
"""

DOCTOR: Final = """
select d.area, d.status, d.detail, d.fix
from pgmem.doctor(p_embedding_model => %(model)s, p_embedding_dims => %(dims)s) as d
"""
