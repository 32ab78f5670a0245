-- The business profile (ragcore.employees.profile): one row. The owner writes
-- description, products, tone and language (an ISO 639-1 code, or '' when unset);
-- POST /profile/learn rebuilds learned_summary and sets learned_at. Every role's
-- context shows it as its business profile part.
CREATE TABLE business_profile (
    only_row        boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    description     text NOT NULL DEFAULT '',
    products        text NOT NULL DEFAULT '',
    tone            text NOT NULL DEFAULT '',
    language        text NOT NULL DEFAULT '',
    learned_summary text NOT NULL DEFAULT '',
    learned_at      timestamptz,
    updated_at      timestamptz
);
