-- stt for Hyprland 0.55 and later (Lua config; for older versions see hyprland.conf).
-- `stt-ctl` must be on Hyprland's PATH (scripts/install puts it in ~/.cargo/bin). Add these lines to your Hyprland Lua config; Hyprland reloads it.

-- The two-press command flow: arm, speak, run (or drop).
hl.bind("SUPER + SHIFT + A", hl.dsp.exec_cmd("stt-ctl command-start"))
hl.bind("SUPER + SHIFT + Return", hl.dsp.exec_cmd("stt-ctl command-execute"))
hl.bind("SUPER + SHIFT + Escape", hl.dsp.exec_cmd("stt-ctl command-cancel"))

-- Push to talk: hold Super+Shift+D while you speak; letting go of D runs what you said as
-- soon as your last words are transcribed.
hl.bind("SUPER + SHIFT + D", hl.dsp.exec_cmd("stt-ctl command-start"))
hl.bind("SUPER + SHIFT + D", hl.dsp.exec_cmd("stt-ctl command-execute --wait"), { release = true })

-- Enter or leave chat mode.
hl.bind("SUPER + SHIFT + T", hl.dsp.exec_cmd("stt-ctl chat-toggle"))

-- Dictation on or off: what you say is typed into the window that has the focus (wtype).
hl.bind("SUPER + SHIFT + W", hl.dsp.exec_cmd("stt-ctl dictate-toggle"))
