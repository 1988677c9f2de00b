-- pulse-sink's PostgreSQL schema (sink/README.md), versions 1 and 2. pulse-sink
-- applies it at start (idempotent, one sink at a time: an advisory lock) and
-- records the versions applied; a later version appends its changes, each
-- idempotent, and its row in pulse_schema.
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

-- Version 2: what the sink keeps of the records around each diagnosis and
-- per iteration of every communicator (the records themselves stay in the
-- job's stream for its retention). Partitioned by day as pulse_diagnoses,
-- so that retention drops a day of all three together.

-- One row per diagnosis with a window: its span and whether the sink has
-- seen every record of it (complete), so that a restarted sink goes on with
-- the windows still open instead of forgetting them.
CREATE TABLE IF NOT EXISTS pulse_windows (
	key text NOT NULL,                -- the diagnosis's (pulse_diagnoses.key)
	day date NOT NULL,                -- the diagnosis's day
	job text NOT NULL,
	comm_id text NOT NULL,            -- the communicator of its evidence, "0x%016x"
	from_time timestamptz NOT NULL,   -- onset - N s
	to_time timestamptz NOT NULL,     -- report + N s
	from_ns bigint NOT NULL,          -- the same in ns (the records' resolution)
	to_ns bigint NOT NULL,
	complete boolean NOT NULL DEFAULT false,
	records integer NOT NULL DEFAULT 0,  -- rows in pulse_window_records, once complete
	dropped integer NOT NULL DEFAULT 0,  -- beyond the per-window cap, not stored
	PRIMARY KEY (key, day)
) PARTITION BY RANGE (day);
CREATE INDEX IF NOT EXISTS pulse_windows_open ON pulse_windows (job) WHERE NOT complete;

-- The evidence window: every operator record of every rank of the
-- diagnosis's communicator that overlaps [from, to]. A record is one
-- rank's operator (comm, rank, seq, op), stored once per diagnosis.
CREATE TABLE IF NOT EXISTS pulse_window_records (
	key text NOT NULL,
	day date NOT NULL,
	job text NOT NULL,
	comm_id text NOT NULL,
	rank integer NOT NULL,
	seq bigint NOT NULL,
	op text NOT NULL,
	nranks integer NOT NULL,
	host text NOT NULL,
	gpu integer NOT NULL,
	status text NOT NULL,             -- complete, hung, not_started, gap, no_traffic
	call_time timestamptz,
	start_time timestamptz,
	end_time timestamptz,
	call_ns bigint NOT NULL,
	duration_ns bigint NOT NULL,
	expected_bytes bigint NOT NULL,
	actual_bytes bigint NOT NULL,
	rate_gbps double precision,
	record jsonb NOT NULL,            -- the whole record (its JSON form, with peers)
	PRIMARY KEY (key, day, comm_id, rank, seq, op)
) PARTITION BY RANGE (day);

-- Per iteration (call index seq) of each communicator and operator: the
-- ranks' records summed up, so that "which rank was slowest, and by how
-- much" needs no raw records.
CREATE TABLE IF NOT EXISTS pulse_iterations (
	job text NOT NULL,
	comm_id text NOT NULL,
	seq bigint NOT NULL,
	op text NOT NULL,
	day date NOT NULL,                -- of the first call (UTC)
	nranks integer NOT NULL,
	records integer NOT NULL,         -- ranks that reported (one record each)
	not_complete integer NOT NULL,    -- of them, hung, not started, or with a data gap
	min_ns bigint NOT NULL,           -- duration (first to last byte)
	median_ns bigint NOT NULL,        -- the middle one; the mean of the two middle ones
	max_ns bigint NOT NULL,
	expected_bytes bigint NOT NULL,   -- over the ranks
	actual_bytes bigint NOT NULL,
	slowest_rank integer NOT NULL,    -- the longest duration (the lowest rank on a tie)
	slowest_host text NOT NULL,
	slowest_gpu integer NOT NULL,
	first_call timestamptz NOT NULL,
	last_end timestamptz,
	PRIMARY KEY (job, comm_id, seq, op, day)
) PARTITION BY RANGE (day);
CREATE INDEX IF NOT EXISTS pulse_iterations_comm ON pulse_iterations (job, comm_id, seq);

INSERT INTO pulse_schema (version) VALUES (2) ON CONFLICT DO NOTHING;
