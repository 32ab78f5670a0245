-- AI employees: the nine built-in roles (seeded on first use) and runtime roles
-- created through PATCH /employees/{role}. Sensitivity and effective autonomy are
-- derived (ragcore.employees.sensitivity), never stored.
CREATE TABLE roles (
    identifier   text PRIMARY KEY CHECK (identifier ~ '^[a-z0-9_-]{1,64}$'),
    display_name text NOT NULL,
    personality  text NOT NULL,
    channels     text[] NOT NULL DEFAULT '{}',
    skill_tags   text[] NOT NULL DEFAULT '{}',
    autonomy     text NOT NULL DEFAULT 'semi' CHECK (autonomy IN ('off', 'semi', 'full')),
    built_in     boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
