-- Least-privilege roles for a scalelab lab (docs/lab.md, SECURITY.md "The job queue and its
-- agents"). Run it as the owner of scalelab's tables, in their database, once they exist (the
-- first `scalelab run --db postgres://…` or `scalelab submit` creates them), and again after an
-- upgrade that adds tables. It creates three group roles, so the owner needs CREATEROLE (or is a
-- superuser); a managed server's admin role usually has it:
--
--   psql -d perf -v ON_ERROR_STOP=1 -f contrib/lab-roles.sql
--   CREATE ROLE alice LOGIN IN ROLE scalelab_submitter;      -- a developer
--   CREATE ROLE lab_epyc_1 LOGIN IN ROLE scalelab_agent;     -- a lab machine's agent
--   CREATE ROLE dashboard LOGIN IN ROLE scalelab_reader;     -- `scalelab serve`
--
-- scalelab_reader    reads everything: runs, the queue, the agents (`ls`, `show`, `queue`, `serve`).
--                    It cannot hold what says a run or an agent is alive (see `liveness`).
-- scalelab_submitter reads, queues jobs and schedules (`submit`), cancels a job that has not ended
--                    (`queue cancel`) and stops a schedule (`queue unschedule`) — nothing else: the
--                    server refuses any other change to a job or schedule (a trigger), stamps its
--                    role as the submitter whatever the row says, and it can add events to a job's
--                    log (each stamped with its role) but never change or delete one. It cannot
--                    write, change or delete a run.
-- scalelab_agent     stores runs and runs the queue, as any host that measures does.
-- None of them can change the schema; the owner migrates it (a newer scalelab opened by the
-- owner first).

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'scalelab_reader') THEN
        CREATE ROLE scalelab_reader NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'scalelab_submitter') THEN
        CREATE ROLE scalelab_submitter NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'scalelab_agent') THEN
        CREATE ROLE scalelab_agent NOLOGIN;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO scalelab_reader, scalelab_submitter, scalelab_agent;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO scalelab_reader, scalelab_submitter, scalelab_agent;

-- Earlier versions of this script let a submitter rewrite a job's log: taken back.
REVOKE INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public FROM scalelab_submitter;
GRANT INSERT ON jobs, schedules, job_events TO scalelab_submitter;
GRANT UPDATE (state, outcome, finished_at, lease_until) ON jobs TO scalelab_submitter;
GRANT UPDATE (active) ON schedules TO scalelab_submitter;
GRANT USAGE ON SEQUENCE jobs_id_seq, schedules_id_seq, job_events_id_seq TO scalelab_submitter;

GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO scalelab_agent;
REVOKE INSERT, UPDATE, DELETE ON scalelab_schema FROM scalelab_agent;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO scalelab_agent;
