-- Built-in roles follow the code's defaults in every field the owner has not edited
-- (ragcore.employees.editing.follow_defaults), so a new version's improvements (a new
-- channel, a better personality) reach databases seeded by an older one. edited names
-- the fields the owner changed through PATCH /employees/{role}. Roles edited before this
-- migration keep every field as it is: which fields were edited is not known.
ALTER TABLE roles ADD COLUMN edited text[] NOT NULL DEFAULT '{}';

UPDATE roles
SET edited = ARRAY['display_name', 'personality', 'channels', 'skill_tags', 'autonomy']
WHERE built_in AND updated_at > created_at;
