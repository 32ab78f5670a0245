-- A rating may come with the asker's comment (POST /conversations/{id}/turns/{turn}/feedback,
-- the widget's POST /widget/feedback: "comment", at most 1,000 characters, stored stripped);
-- NULL when none was given, and when the rating is taken back (ragcore.api.conversations).
ALTER TABLE conversation_turns ADD COLUMN feedback_comment text;
