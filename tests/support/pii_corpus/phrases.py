"""Prose templates per language: email bodies, signatures, chat messages. `{slot}` marks where a value or a
look-alike goes (see formats/messages.py for what each slot holds); `{ip_end}` is an address and the period
that ends its sentence, `{phone2}` a number in brackets.

Japanese and Chinese templates put values right next to CJK characters, without spaces, as such text is written.
"""

from __future__ import annotations

# (subject, body) of the emails a support or IT team sends.
EMAILS = {
    "en": [
        (
            "Your refund for order {order}",
            "Thanks for reaching out about order {order}. We issued a refund of {amount} on {date}; it goes to the "
            "IBAN you gave us, {iban}, within three to five business days. If it has not arrived by then, call us "
            "on {phone} or write to {email}.",
        ),
        (
            "New sign-in to your account",
            "We noticed a sign-in to your account at {time} on {date}. The request came from {ip_end} If this was "
            "not you, reset your password and tell security at {email}. Your recovery number is still {phone}.",
        ),
        (
            "Delivery update {tracking}",
            "Your parcel {tracking} left our warehouse on {date}. The courier will call you before delivery "
            "{phone2}; if you are out, they try {phone}. Reference {ref}.",
        ),
        (
            "Payroll details",
            "Please confirm the details we hold for payroll: SSN {ssn}, phone {phone}, personal email {email}. "
            "From {date} salary goes to {iban}. The old card {masked} will be cancelled.",
        ),
        (
            "Invoice {order} overdue",
            "Invoice {order} for {amount} has been overdue since {date}. Please transfer the amount to {iban} (BIC "
            "{bic}) quoting {ref}. Questions go to {email} or {phone}.",
        ),
        (
            "VPN maintenance {date}",
            "The VPN gateway {ip} was upgraded to {version} at {time}. The last client it refused was {ip_end} "
            "Please re-enroll; the service desk is on {phone}.",
        ),
    ],
    "de": [
        (
            "Ihre Erstattung zu Bestellung {order}",
            "vielen Dank für Ihre Nachricht zur Bestellung {order}. Wir haben am {date} {amount} auf Ihr Konto "
            "{iban} erstattet. Die Gutschrift dauert drei bis fünf Werktage. Rückfragen gern unter {phone} oder an "
            "{email}.",
        ),
        (
            "Neue Anmeldung bei Ihrem Konto",
            "wir haben am {date} um {time} eine Anmeldung bei Ihrem Kundenkonto festgestellt. Die Anfrage kam von "
            "{ip_end} Falls Sie das nicht waren, ändern Sie bitte Ihr Passwort und melden Sie sich unter {phone}.",
        ),
        (
            "Lieferung {tracking}",
            "Ihre Sendung {tracking} wurde am {date} an den Zusteller übergeben. Der Fahrer ruft Sie vorher an "
            "{phone2}, sonst unter {phone}. Ihre Kundennummer lautet {ref}.",
        ),
        (
            "Zahlungserinnerung {order}",
            "die Rechnung {order} über {amount} ist seit dem {date} fällig. Bitte überweisen Sie den Betrag auf "
            "{iban} (BIC {bic}) mit dem Verwendungszweck {ref}. Bei Fragen erreichen Sie uns unter {phone} oder "
            "{email}.",
        ),
        (
            "Wartung am {date}",
            "am {date} ab {time} Uhr wird der Server {ip} auf Version {version} aktualisiert. Zuletzt abgewiesen "
            "wurde {ip_end} Ansprechpartner ist das Rechenzentrum, Tel. {phone}.",
        ),
    ],
    "fr": [
        (
            "Votre remboursement {order}",
            "merci pour votre message concernant la commande {order}. Nous avons remboursé {amount} le {date} sur "
            "le compte {iban}. Le virement arrive sous trois à cinq jours ouvrés. Pour toute question : {phone} ou "
            "{email}.",
        ),
        (
            "Nouvelle connexion à votre compte",
            "une connexion à votre compte a eu lieu le {date} à {time}. Elle provenait de l'adresse {ip_end} Si ce "
            "n'était pas vous, changez votre mot de passe et appelez-nous au {phone}.",
        ),
        (
            "Livraison {tracking}",
            "votre colis {tracking} a été remis au transporteur le {date}. Le livreur vous appellera avant de "
            "passer {phone2}, sinon au {phone}. Référence client : {ref}.",
        ),
        (
            "Relance facture {order}",
            "la facture {order} d'un montant de {amount} est échue depuis le {date}. Merci de régler par virement "
            "sur l'IBAN {iban} (BIC {bic}) en indiquant {ref}. Contact : {email}, {phone}.",
        ),
        (
            "Maintenance du {date}",
            "le serveur {ip} passera en version {version} le {date} à {time}. Le dernier accès refusé venait de "
            "{ip_end} Le support reste joignable au {phone}.",
        ),
    ],
    "es": [
        (
            "Su reembolso del pedido {order}",
            "gracias por escribirnos sobre el pedido {order}. El {date} devolvimos {amount} a la cuenta {iban}; el "
            "abono tarda de tres a cinco días hábiles. Si tiene dudas, llámenos al {phone} o escriba a {email}.",
        ),
        (
            "Nuevo inicio de sesión",
            "detectamos un inicio de sesión en su cuenta el {date} a las {time}. La solicitud vino de {ip_end} Si "
            "no fue usted, cambie la contraseña y llame al {phone}.",
        ),
        (
            "Envío {tracking}",
            "su envío {tracking} salió del almacén el {date}. El repartidor le llamará antes de la entrega "
            "{phone2}, o si no al {phone}. Referencia: {ref}.",
        ),
        (
            "Factura {order} vencida",
            "la factura {order} por {amount} está vencida desde el {date}. Por favor, transfiera el importe a "
            "{iban} (BIC {bic}) indicando {ref}. Consultas: {email} o {phone}.",
        ),
        (
            "Mantenimiento {date}",
            "el servidor {ip} se actualizará a la versión {version} el {date} a las {time}. La última conexión "
            "rechazada vino de {ip_end} Soporte: {phone}.",
        ),
    ],
}

# Boilerplate a thread carries: text without PII between the values, as real mail has.
DISCLAIMERS = {
    "en": (
        "This message and any attachments are confidential and intended solely for the addressee. If you received "
        "it in error, please notify the sender and delete it. Our support hours are Monday to Friday, {time} to "
        "{time2}."
    ),
    "de": (
        "Diese E-Mail enthält vertrauliche Informationen. Wenn Sie nicht der richtige Adressat sind, informieren "
        "Sie bitte sofort den Absender und vernichten Sie diese Mail. Unsere Hotline ist werktags von {time} bis "
        "{time2} Uhr besetzt."
    ),
    "fr": (
        "Ce message et ses pièces jointes sont confidentiels et destinés exclusivement à leur destinataire. Si "
        "vous l'avez reçu par erreur, merci d'en avertir l'expéditeur et de le supprimer. Le service client est "
        "ouvert du lundi au vendredi de {time} à {time2}."
    ),
    "es": (
        "Este mensaje y sus anexos son confidenciales y están dirigidos exclusivamente a su destinatario. Si lo ha "
        "recibido por error, avise al remitente y elimínelo. Nuestro horario de atención es de lunes a viernes de "
        "{time} a {time2}."
    ),
}

GREETINGS = {
    "en": "Hi {first},",
    "de": "Hallo {first},",
    "fr": "Bonjour {first},",
    "es": "Hola {first}:",
}

SIGNATURES = {
    "en": "Best regards,\n{name}\n{company}\nTel: {phone}\nMobile: {mobile}\n{email}\n",
    "de": "Mit freundlichen Grüßen\n{name}\n{company}\nTel.: {phone}\nMobil: {mobile}\nE-Mail: {email}\n"
    "USt-IdNr.: {vat}\n",
    "fr": "Cordialement,\n{name}\n{company}\nTél. : {phone}\nPortable : {mobile}\nCourriel : {email}\nTVA : {vat}\n",
    "es": "Un saludo,\n{name}\n{company}\nTel.: {phone}\nMóvil: {mobile}\nCorreo: {email}\n",
}

QUOTE_INTRO = {
    "en": "On {date}, {name} <{email}> wrote:",
    "de": "Am {date} schrieb {name} <{email}>:",
    "fr": "Le {date}, {name} <{email}> a écrit :",
    "es": "El {date}, {name} <{email}> escribió:",
}

QUOTED = {
    "en": "> Please call me back on {phone}, I am at my desk until {time}.",
    "de": "> Bitte rufen Sie mich unter {phone} zurück, ich bin bis {time} Uhr im Büro.",
    "fr": "> Merci de me rappeler au {phone}, je suis joignable jusqu'à {time}.",
    "es": "> Por favor llámeme al {phone}, estoy en la oficina hasta las {time}.",
}

CHAT = {
    "ja": [
        "{name}さん、電話番号は{phone}です。",
        "メールアドレスは{email}です",
        "ご注文{order}は{date}に発送しました。",
        "サーバー{ip}から{time}にアクセスがありました",
        "連絡先：{phone}（平日のみ）",  # noqa: RUF001
        "請求書は{email}宛に送ってください。",
        "振込先は{iban}です。",
    ],
    "zh": [
        "我的电话是{phone}，邮箱{email}",  # noqa: RUF001
        "请把发票发到{email}谢谢",
        "服务器{ip}在{time}宕机了",
        "订单号{order}已经发货，运单号{tracking}",  # noqa: RUF001
        "有事打我手机{phone}",
        "退款账户：{iban}",  # noqa: RUF001
    ],
    "pt": [
        "Meu celular é {phone}, pode chamar no WhatsApp.",
        "o email dela é {email}.",
        "o IBAN para reembolso é {iban}",
        "bloqueei o acesso vindo do IP {ip_end}",
        "pedido {order} entregue em {date}",
        "liga pra mim no {phone} depois das {time}",
    ],
    "es": [
        "mi móvil es {phone}, escríbeme por WhatsApp",
        "mándalo a {email} por favor",
        "el pago llegó a {iban}",
        "hubo un acceso desde {ip_end}",
        "el pedido {order} sale el {date}",
    ],
    "en": [
        "can you ping {email} about the invoice?",
        "call me on {phone} when you're free",
        "seeing errors from {ip} since {time}",
        "customer says the refund should go to {iban}",
        "blocked traffic from {ip_end}",
        "the card ending {masked} was declined, ref {ref}",
        "customer's SSN {ssn}, can you verify it against the W-9?",
    ],
    "de": [
        "Ruf mich kurz unter {phone} an.",
        "Schick es bitte an {email}.",
        "Die Zugriffe kamen von {ip_end}",
        "Die Erstattung geht auf {iban}.",
        "Bestellung {order} kommt am {date}.",
    ],
    "fr": [
        "mon numéro : {phone}",
        "écris-moi à {email} stp",
        "on a bloqué {ip_end}",
        "remboursement sur {iban}",
        "la commande {order} part le {date}",
    ],
}
