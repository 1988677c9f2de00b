-- pulse-sink's PostgreSQL schema, version 1 (sink/README.md). pulse-sink
-- applies it at start (idempotent) and records the version it applied;
-- a later version adds a file of changes and bumps pulse_schema.
CREATE TABLE IF NOT EXISTS pulse_schema (
	version integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
);

-- One row per diagnosis, exactly once: its key (the analyzer's, from the
-- data: localizer/class/communicator/operator/suspect) is unique, and a
-- diagnosis always falls on the same day (its report time), so (key, day)
-- is a primary key that partitioning by day allows.
CREATE TABLE IF NOT EXISTS pulse_diagnoses (
	key text NOT NULL,
	day date NOT NULL,                -- of report_time, UTC: the partition
	job text NOT NULL,
	class text NOT NULL,              -- "communication fail-slow", ...
	level text NOT NULL,              -- "machine" or "group"
	localizer text NOT NULL,          -- "pulse" or "op-level"
	suspects jsonb NOT NULL,          -- [{"host","gpu","rank"}]
	evidence jsonb NOT NULL,          -- the analyzer's report entry, whole
	score double precision,
	onset_time timestamptz,           -- first evidence (host time)
	report_time timestamptz NOT NULL, -- when it could be reported (data time)
	episode_start timestamptz,
	episode_end timestamptz,
	lease_revision bigint,            -- the fencing token of the analyzer that made it
	analyzer text,
	stored_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (key, day)
) PARTITION BY RANGE (day);

CREATE INDEX IF NOT EXISTS pulse_diagnoses_job ON pulse_diagnoses (job, report_time);

INSERT INTO pulse_schema (version) VALUES (1) ON CONFLICT DO NOTHING;
