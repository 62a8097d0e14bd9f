# Every target creates and uses the virtual environment in .venv/, so a fresh
# clone needs nothing but Python 3.11+ and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint check bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,fast]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/battlesheep serve --game 1 --port 0

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# amqtt: the MQTT tests' broker where no Mosquitto is installed (both run where it is). It
# goes in a directory of its own, which only the broker's process imports from: it pins
# websockets==15.0.1, which must not replace the project's own websockets in the venv.
AMQTT := amqtt>=0.12.1
AMQTT_DIR := $(VENV)/amqtt

$(AMQTT_DIR)/.installed: $(STAMP)
	rm -rf $(AMQTT_DIR)
	$(BIN)/python -m pip install --quiet --target $(AMQTT_DIR) '$(AMQTT)'
	touch $@

# The viewer's tests need a Chromium: tests/provision_browser.py finds or installs one first
# (Debian's as root with apt-get, else Playwright's own; without one they skip, saying why).
test: $(STAMP) $(AMQTT_DIR)/.installed lint
	$(BIN)/python -m tests.provision_browser
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/battlesheep bench engine

# Course agents (README "Building the course agents"). TEAM is the team id the agent
# sends: `make agent1 TEAM=7` builds dist/team7_agent1 from params/agent1.toml.
AGENT ?= 1
DIST ?= dist
GAME ?= 1
GAMES ?= 24
LIMIT ?= 3.0
COURSE_AGENTS := agent1 agent2 agent3 agent4

.PHONY: agents $(COURSE_AGENTS) exe tune submission need-team

need-team:
	@test -n "$(TEAM)" || { echo "give the course team id: make $(MAKECMDGOALS) TEAM=<ID>"; exit 2; }

$(COURSE_AGENTS): $(STAMP) need-team
	$(BIN)/battlesheep build --agent $(@:agent%=%) --team $(TEAM) --out-dir $(DIST)

agents: $(COURSE_AGENTS)

exe: $(STAMP) need-team
	$(BIN)/python -m pip install --quiet -e '.[exe]'
	$(BIN)/battlesheep build --exe --agent $(AGENT) --team $(TEAM) --out-dir $(DIST)

tune: $(STAMP)
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make tune A=a.toml B=b.toml GAME=1 [GAMES=24] [LIMIT=3.0]"; exit 2; }
	$(BIN)/battlesheep tournament $(A) $(B) --game $(GAME) --games $(GAMES) --time-limit $(LIMIT)

# CHECK_LIMIT: seconds per move of the check game the submission must play cleanly.
CHECK_LIMIT ?= 1.0

submission: $(STAMP) need-team
	$(BIN)/python -m pip install --quiet -e '.[exe]'
	$(BIN)/battlesheep submission --agent $(AGENT) --team $(TEAM) --out-dir $(DIST) \
		--check-time-limit $(CHECK_LIMIT)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist build
