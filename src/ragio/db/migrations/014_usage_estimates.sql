-- What we estimated a call's prompt at when its tokens were reserved: with the provider's
-- own count once settled, it calibrates the holds of later calls (ragcore.usage.prompt_hold).
ALTER TABLE usage_records ADD COLUMN estimated_prompt_tokens integer;
