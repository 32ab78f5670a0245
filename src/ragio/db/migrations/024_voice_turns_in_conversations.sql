-- A phone call's turn is kept once: as a turn of the call's conversation
-- (conversation_turns; the conversation on channel 'voice' whose continuation is the
-- call's place key, ragcore.chat.history.place_key('voice', call_sid), the SHA-256 of
-- 'voice:<call_sid>'), numbered by the call's questions. Its answer records it, the
-- call's end of the turn finishes it: how it ended (interrupted, hung up, failed when its
-- speech failed) and the call's stage timings, in timings. GET /voice/calls reads them
-- there. voice_turns, which held a second copy of each, goes.
ALTER TABLE conversation_turns DROP CONSTRAINT conversation_turns_outcome_check;
ALTER TABLE conversation_turns ADD CONSTRAINT conversation_turns_outcome_check
    CHECK (outcome IN ('answered', 'not_found', 'limited', 'failed', 'interrupted', 'hung up'));

-- The calls with turns, each with its conversation (the latest with its key, as the
-- service finds it); a call recorded before calls were conversations gets one.
CREATE TEMPORARY TABLE call_conversations ON COMMIT DROP AS
SELECT v.id AS call_id, v.role, v.caller_hash, v.started_at, k.key,
       (SELECT c.id FROM conversations c
         WHERE c.channel = 'voice' AND c.continuation = k.key
         ORDER BY c.updated_at DESC, c.id DESC LIMIT 1) AS conversation_id
  FROM voice_calls v
 CROSS JOIN LATERAL (SELECT encode(sha256(convert_to('voice:' || v.call_sid, 'UTF8')), 'hex')
                     AS key) k
 WHERE EXISTS (SELECT 1 FROM voice_turns t WHERE t.call_id = v.id);

WITH begun AS (
    INSERT INTO conversations (channel, role, participant_hash, continuation, started_at,
                               updated_at, turn_count)
    SELECT 'voice', role, caller_hash, key, started_at, started_at, 0
      FROM call_conversations WHERE conversation_id IS NULL
    RETURNING id, continuation
)
UPDATE call_conversations cc SET conversation_id = begun.id
  FROM begun WHERE begun.continuation = cc.key AND cc.conversation_id IS NULL;

-- Each call's turn beside the conversation's copy of it, if it has one: the same question,
-- the first asked with the first, the second with the second, and so on. (The copy was
-- recorded when the question was answered; a question never answered has none.)
CREATE TEMPORARY TABLE moving ON COMMIT DROP AS
WITH said AS (
    SELECT cc.conversation_id, t.*,
           row_number() OVER (PARTITION BY t.call_id, coalesce(t.question, '')
                              ORDER BY t.turn) AS nth
      FROM voice_turns t JOIN call_conversations cc ON cc.call_id = t.call_id
), kept AS (
    SELECT ct.conversation_id, ct.turn AS kept_turn, ct.question,
           row_number() OVER (PARTITION BY ct.conversation_id, ct.question
                              ORDER BY ct.turn) AS nth
      FROM conversation_turns ct
     WHERE ct.conversation_id IN (SELECT conversation_id FROM call_conversations)
)
SELECT said.*, kept.kept_turn
  FROM said LEFT JOIN kept
    ON kept.conversation_id = said.conversation_id
   AND kept.question = coalesce(said.question, '') AND kept.nth = said.nth;

-- A duplicate: the conversation's copy stays (it has the standalone question searched and
-- the whole citations), finished as the call would now: how the turn ended, unless
-- answered (the copy's not_found and limited are finer), and the call's stage timings.
UPDATE conversation_turns ct
   SET outcome = CASE WHEN m.outcome = 'answered' AND ct.outcome IN ('not_found', 'limited')
                      THEN ct.outcome ELSE m.outcome END,
       timings = m.stages
  FROM moving m
 WHERE m.kept_turn IS NOT NULL
   AND ct.conversation_id = m.conversation_id AND ct.turn = m.kept_turn;

-- A question with no copy (never answered) moves, its citations in a conversation's
-- shape (no chunk, snippet or score was kept for them); numbered after the others for now.
INSERT INTO conversation_turns (conversation_id, turn, question, search_question, answer,
                                outcome, citations, role, provider, model, language,
                                timings, created_at)
SELECT m.conversation_id, 1000000 + m.turn, coalesce(m.question, ''), NULL,
       coalesce(m.answer, ''), m.outcome,
       (SELECT coalesce(jsonb_agg(jsonb_build_object('chunk_id', NULL, 'snippet', '',
                                                     'score', 0, 'heading_path', '[]'::jsonb,
                                                     'live_action_id', NULL)
                                  || e.citation ORDER BY e.n), '[]'::jsonb)
          FROM jsonb_array_elements(m.citations) WITH ORDINALITY AS e(citation, n)),
       m.role, m.provider, m.model, m.language, m.stages, m.created_at
  FROM moving m
 WHERE m.kept_turn IS NULL;

-- The calls' conversations numbered again in the order their turns were recorded, so a
-- call's turns are its questions, 1, 2, …, as the service numbers them from now on.
CREATE TEMPORARY TABLE renumbered ON COMMIT DROP AS
SELECT conversation_id, turn AS old_turn,
       row_number() OVER (PARTITION BY conversation_id ORDER BY created_at, turn) AS new_turn
  FROM conversation_turns
 WHERE conversation_id IN (SELECT conversation_id FROM call_conversations);
UPDATE conversation_turns SET turn = -turn
 WHERE conversation_id IN (SELECT conversation_id FROM call_conversations);
UPDATE conversation_turns ct SET turn = r.new_turn
  FROM renumbered r
 WHERE ct.conversation_id = r.conversation_id AND ct.turn = -r.old_turn;
UPDATE conversations c
   SET turn_count = (SELECT count(*) FROM conversation_turns ct WHERE ct.conversation_id = c.id),
       updated_at = GREATEST(c.updated_at, (SELECT max(ct.created_at) FROM conversation_turns ct
                                             WHERE ct.conversation_id = c.id))
 WHERE c.id IN (SELECT conversation_id FROM call_conversations);

DROP TABLE voice_turns;
