-- Least-privilege roles for a scalelab lab (docs/lab.md, SECURITY.md "The job queue and its
-- agents"). Run it as the owner of scalelab's tables, in their database, once they exist (the
-- first `scalelab run --db postgres://…` or `scalelab submit` creates them), and again after an
-- upgrade that adds tables:
--
--   psql -d perf -v ON_ERROR_STOP=1 -f contrib/lab-roles.sql
--   CREATE ROLE alice LOGIN IN ROLE scalelab_submitter;      -- a developer
--   CREATE ROLE lab_epyc_1 LOGIN IN ROLE scalelab_agent;     -- a lab machine's agent
--   CREATE ROLE dashboard LOGIN IN ROLE scalelab_reader;     -- `scalelab serve`
--
-- scalelab_reader    reads everything: runs, the queue, the agents (`ls`, `show`, `queue`, `serve`).
-- scalelab_submitter reads, queues jobs and schedules (`submit`), cancels jobs and stops
--                    schedules (`queue cancel`, `queue unschedule`); it cannot write, change or
--                    delete a run. (It can set a job's state: a submitter can mark a job failed
--                    or done, not forge what it measured.)
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

GRANT INSERT ON jobs, schedules TO scalelab_submitter;
GRANT UPDATE (state, outcome, finished_at, lease_until, log) ON jobs TO scalelab_submitter;
GRANT UPDATE (active) ON schedules TO scalelab_submitter;
GRANT USAGE ON SEQUENCE jobs_id_seq, schedules_id_seq TO scalelab_submitter;

GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO scalelab_agent;
REVOKE INSERT, UPDATE, DELETE ON scalelab_schema FROM scalelab_agent;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO scalelab_agent;
