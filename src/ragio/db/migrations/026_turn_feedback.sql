-- A turn may carry the asker's rating of its answer (POST /conversations/{id}/turns/{turn}/
-- feedback, the widget's POST /widget/feedback): 'up' or 'down', and when it was given;
-- NULL when none was given or it was taken back (the rule is ragcore.api.conversations).
ALTER TABLE conversation_turns
    ADD COLUMN feedback text CHECK (feedback IN ('up', 'down')),
    ADD COLUMN feedback_at timestamptz;
