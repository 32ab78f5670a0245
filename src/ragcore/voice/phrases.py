"""The words a call says on its own (the apology, the silence prompts, the goodbyes, the
built greeting), in the languages the service asks its live-data questions in
(``ragcore.live.matching.QUESTIONS``): English, German, French, Spanish, Italian, Dutch
and Portuguese.

Which language: the caller's, once they have spoken (``Call`` follows the language of
their last question: see ``caller_language``); before that, the one the service is
configured for (``call_language``); English when neither is one of these.
"""

from __future__ import annotations

from ragcore.language import function_word_language, worth_detecting

APOLOGY = "apology"
NO_ANSWER = "no_answer"
STILL_THERE = "still_there"
GOODBYE = "goodbye"
CANT_HEAR = "cant_hear"
MISSED = "missed"
SHUTTING_DOWN = "shutting_down"
#: human handoff (docs/handoff.md): a message left for a person, a transfer about to be
#: made (the handing-over turn says the pipeline's own notice), a transfer that failed
MESSAGE_TAKEN = "message_taken"
PUTTING_THROUGH = "putting_through"
TRANSFER_FAILED = "transfer_failed"

PHRASES: dict[str, dict[str, str]] = {
    "en": {
        APOLOGY: "Sorry, something went wrong on my side. Could you ask me that again?",
        NO_ANSWER: "Sorry, I have no answer to that.",
        STILL_THERE: "Are you still there? Ask me anything, or just hang up when you're done.",
        GOODBYE: "I haven't heard anything, so I'll end the call now. Goodbye!",
        CANT_HEAR: "Sorry, I can't hear you right now. Please call again later. Goodbye!",
        MISSED: "Sorry, I missed that. Could you say it again?",
        SHUTTING_DOWN: (
            "Sorry, I have to end the call now. Please call again in a few minutes. Goodbye!"
        ),
        MESSAGE_TAKEN: "Thank you, your message is passed on. Anything else?",
        PUTTING_THROUGH: "I'll put you through to a person now.",
        TRANSFER_FAILED: (
            "Sorry, I couldn't put you through. "
            "Please leave your message after this, and it will be passed on."
        ),
    },
    "de": {
        APOLOGY: "Entschuldigung, bei mir ist etwas schiefgegangen. "
        "Könnten Sie die Frage noch einmal stellen?",
        NO_ANSWER: "Entschuldigung, darauf habe ich keine Antwort.",
        STILL_THERE: "Sind Sie noch da? Fragen Sie mich gern etwas, "
        "oder legen Sie einfach auf, wenn Sie fertig sind.",
        GOODBYE: "Ich habe nichts mehr gehört, deshalb beende ich das Gespräch jetzt. "
        "Auf Wiederhören!",
        CANT_HEAR: "Entschuldigung, ich kann Sie gerade nicht hören. "
        "Bitte rufen Sie später noch einmal an. Auf Wiederhören!",
        MISSED: "Entschuldigung, das habe ich nicht verstanden. Könnten Sie es wiederholen?",
        SHUTTING_DOWN: "Entschuldigung, ich muss das Gespräch jetzt beenden. "
        "Bitte rufen Sie in ein paar Minuten wieder an. Auf Wiederhören!",
        MESSAGE_TAKEN: "Danke, Ihre Nachricht wird weitergegeben. Sonst noch etwas?",
        PUTTING_THROUGH: "Ich verbinde Sie jetzt mit einer Ansprechperson.",
        TRANSFER_FAILED: "Entschuldigung, ich konnte Sie nicht verbinden. "
        "Bitte hinterlassen Sie nach diesem Hinweis Ihre Nachricht, sie wird weitergegeben.",
    },
    "fr": {
        APOLOGY: "Désolé, un problème est survenu de mon côté. "
        "Pourriez-vous reposer votre question ?",
        NO_ANSWER: "Désolé, je n'ai pas de réponse à cela.",
        STILL_THERE: "Êtes-vous toujours là ? Posez-moi une question, "
        "ou raccrochez simplement quand vous avez terminé.",
        GOODBYE: "Je n'entends plus rien, je vais donc mettre fin à l'appel. Au revoir !",
        CANT_HEAR: "Désolé, je ne vous entends pas pour le moment. "
        "Merci de rappeler plus tard. Au revoir !",
        MISSED: "Désolé, je n'ai pas compris. Pourriez-vous répéter ?",
        SHUTTING_DOWN: "Désolé, je dois mettre fin à l'appel. "
        "Merci de rappeler dans quelques minutes. Au revoir !",
        MESSAGE_TAKEN: "Merci, votre message sera transmis. Autre chose ?",
        PUTTING_THROUGH: "Je vous mets en relation avec une personne.",
        TRANSFER_FAILED: "Désolé, je n'ai pas pu vous mettre en relation. "
        "Laissez votre message après ceci, il sera transmis.",
    },
    "es": {
        APOLOGY: "Lo siento, algo ha fallado por mi parte. ¿Podría repetir la pregunta?",
        NO_ANSWER: "Lo siento, no tengo respuesta para eso.",
        STILL_THERE: "¿Sigue ahí? Pregúnteme lo que quiera, o cuelgue cuando haya terminado.",
        GOODBYE: "No he oído nada, así que voy a terminar la llamada. ¡Adiós!",
        CANT_HEAR: "Lo siento, ahora mismo no le oigo. Por favor, llame más tarde. ¡Adiós!",
        MISSED: "Lo siento, no lo he entendido. ¿Podría repetirlo?",
        SHUTTING_DOWN: "Lo siento, tengo que terminar la llamada. "
        "Por favor, vuelva a llamar en unos minutos. ¡Adiós!",
        MESSAGE_TAKEN: "Gracias, su mensaje se transmitirá. ¿Algo más?",
        PUTTING_THROUGH: "Le paso ahora con una persona.",
        TRANSFER_FAILED: "Lo siento, no he podido pasarle la llamada. "
        "Deje su mensaje después de esto y lo transmitiremos.",
    },
    "it": {
        APOLOGY: "Mi scusi, qualcosa è andato storto da parte mia. Può ripetere la domanda?",
        NO_ANSWER: "Mi scusi, non ho una risposta a questo.",
        STILL_THERE: "È ancora in linea? Mi chieda pure qualcosa, "
        "oppure riattacchi quando ha finito.",
        GOODBYE: "Non ho sentito nulla, quindi chiudo la chiamata. Arrivederci!",
        CANT_HEAR: "Mi scusi, in questo momento non la sento. "
        "Richiami più tardi, per favore. Arrivederci!",
        MISSED: "Mi scusi, non ho capito. Può ripetere?",
        SHUTTING_DOWN: "Mi scusi, devo chiudere la chiamata. "
        "Richiami tra qualche minuto, per favore. Arrivederci!",
        MESSAGE_TAKEN: "Grazie, il suo messaggio verrà inoltrato. Desidera altro?",
        PUTTING_THROUGH: "La metto in contatto con una persona.",
        TRANSFER_FAILED: "Mi scusi, non sono riuscito a passarle la chiamata. "
        "Lasci pure il suo messaggio dopo questo avviso: verrà inoltrato.",
    },
    "nl": {
        APOLOGY: "Sorry, er ging aan mijn kant iets mis. Kunt u de vraag nog eens stellen?",
        NO_ANSWER: "Sorry, daar heb ik geen antwoord op.",
        STILL_THERE: "Bent u er nog? Vraag me gerust iets, of hang op als u klaar bent.",
        GOODBYE: "Ik hoor niets meer, dus ik beëindig het gesprek nu. Tot ziens!",
        CANT_HEAR: "Sorry, ik kan u nu niet horen. Belt u later nog eens? Tot ziens!",
        MISSED: "Sorry, dat heb ik niet verstaan. Kunt u het herhalen?",
        SHUTTING_DOWN: "Sorry, ik moet het gesprek nu beëindigen. "
        "Belt u over een paar minuten nog eens? Tot ziens!",
        MESSAGE_TAKEN: "Dank u, uw bericht wordt doorgegeven. Kan ik nog iets voor u doen?",
        PUTTING_THROUGH: "Ik verbind u nu door met een medewerker.",
        TRANSFER_FAILED: "Sorry, ik kon u niet doorverbinden. "
        "Spreek na dit bericht uw boodschap in, dan wordt die doorgegeven.",
    },
    "pt": {
        APOLOGY: "Desculpe, algo correu mal do meu lado. Pode repetir a pergunta?",
        NO_ANSWER: "Desculpe, não tenho resposta para isso.",
        STILL_THERE: "Ainda está aí? Pergunte-me o que quiser, ou desligue quando terminar.",
        GOODBYE: "Não ouvi nada, por isso vou terminar a chamada. Adeus!",
        CANT_HEAR: "Desculpe, neste momento não o consigo ouvir. "
        "Ligue mais tarde, por favor. Adeus!",
        MISSED: "Desculpe, não percebi. Pode repetir?",
        SHUTTING_DOWN: "Desculpe, tenho de terminar a chamada. "
        "Ligue novamente daqui a alguns minutos, por favor. Adeus!",
        MESSAGE_TAKEN: "Obrigado, a sua mensagem será transmitida. Mais alguma coisa?",
        PUTTING_THROUGH: "Vou transferi-lo agora para uma pessoa.",
        TRANSFER_FAILED: "Desculpe, não consegui transferir a chamada. "
        "Deixe a sua mensagem depois disto e ela será transmitida.",
    },
}

#: the built greeting (VOICE_GREETING blank): who answers, and what to ask about
GREETINGS: dict[str, dict[str, str]] = {
    "en": {
        "named": "this is {name}, the virtual assistant",
        "unnamed": "this is the virtual assistant",
        "topic": "your questions about {topic}",
        "no_topic": "your questions about our business",
        "text": "Hello, {who}. I can answer {about}. What would you like to know?",
    },
    "de": {
        "named": "hier ist {name}, die virtuelle Assistenz",
        "unnamed": "hier ist die virtuelle Assistenz",
        "topic": "Ihre Fragen zu {topic}",
        "no_topic": "Ihre Fragen zu unserem Unternehmen",
        "text": "Hallo, {who}. Ich beantworte {about}. Was möchten Sie wissen?",
    },
    "fr": {
        "named": "ici {name}, l'assistant virtuel",
        "unnamed": "ici l'assistant virtuel",
        "topic": "à vos questions sur {topic}",
        "no_topic": "à vos questions sur notre entreprise",
        "text": "Bonjour, {who}. Je peux répondre {about}. Que souhaitez-vous savoir ?",
    },
    "es": {
        "named": "le atiende {name}, el asistente virtual",
        "unnamed": "le atiende el asistente virtual",
        "topic": "sus preguntas sobre {topic}",
        "no_topic": "sus preguntas sobre nuestro negocio",
        "text": "Hola, {who}. Puedo responder {about}. ¿Qué le gustaría saber?",
    },
    "it": {
        "named": "sono {name}, l'assistente virtuale",
        "unnamed": "sono l'assistente virtuale",
        "topic": "alle sue domande su {topic}",
        "no_topic": "alle sue domande sulla nostra attività",
        "text": "Buongiorno, {who}. Posso rispondere {about}. Cosa desidera sapere?",
    },
    "nl": {
        "named": "u spreekt met {name}, de virtuele assistent",
        "unnamed": "u spreekt met de virtuele assistent",
        "topic": "uw vragen over {topic}",
        "no_topic": "uw vragen over ons bedrijf",
        "text": "Hallo, {who}. Ik kan {about} beantwoorden. Wat wilt u weten?",
    },
    "pt": {
        "named": "fala {name}, o assistente virtual",
        "unnamed": "fala o assistente virtual",
        "topic": "às suas perguntas sobre {topic}",
        "no_topic": "às suas perguntas sobre o nosso negócio",
        "text": "Olá, {who}. Posso responder {about}. O que gostaria de saber?",
    },
}

LANGUAGES = tuple(PHRASES)


def phrase(name: str, language: str) -> str:
    """The words ``name`` (``APOLOGY``, ``STILL_THERE``, …) in ``language``, English when
    we have none in it."""
    return PHRASES.get(language, PHRASES["en"])[name]


def spoken_language(code: str | None) -> str | None:
    """``code`` (``de``, ``de-DE``, ``DE``) as one of ``LANGUAGES``; None otherwise
    (``multi``, a language we have no words in, nothing)."""
    if not code:
        return None
    primary = code.strip().lower().split("-")[0]
    return primary if primary in PHRASES else None


def call_language(*configured: str | None) -> str:
    """The language a call speaks before the caller has: the first of ``configured``
    (most specific first: VOICE_LANGUAGE, the business profile's language,
    DEFAULT_LANGUAGE) that is one of ``LANGUAGES``; English otherwise."""
    for code in configured:
        known = spoken_language(code)
        if known is not None:
            return known
    return "en"


def caller_language(question: str, answered_in: str | None = None) -> str | None:
    """The language the caller spoke ``question`` in, as far as the core can tell: the
    language its answer was given in (``ChatAnswer.language``, the chat pipeline's
    detection) when the question is long enough to detect, else its function words'
    (``ragcore.language.function_word_language``); None when neither tells one of
    ``LANGUAGES`` (a short "yes": the call keeps the language it had)."""
    if worth_detecting(question):
        known = spoken_language(answered_in)
        if known is not None:
            return known
    return spoken_language(function_word_language(question))
