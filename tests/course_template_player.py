"""A player written the way the course's Python client template works.

Plain blocking ``socket`` and ``struct``, nothing of this project imported: it
is an independent implementation of the client side of the protocol and of
the rules it needs (border cells, slides), so the arena is tested against
what students actually run.

    python course_template_player.py TEAM_ID [PORT] [--game G] [--seed S] [--fault NAME]

The ``--fault`` options make it misbehave for the arena's robustness tests:
crash, hang, quit, garbage, flood, illegal, late, stale, reconnect, halfframe.
"""

import contextlib
import random
import socket
import struct
import sys
import time

Step = tuple[tuple[int, int], int, int]

DIRS = {
    1: (-1, -1),
    2: (0, -1),
    3: (1, -1),
    4: (-1, 0),
    6: (1, 0),
    7: (-1, 1),
    8: (0, 1),
    9: (1, 1),
}


class Connection:
    def __init__(self, port: int, team: int) -> None:
        self.team = team
        self.port = port
        self.sock: socket.socket

    def connect(self) -> None:
        for _ in range(100):
            try:
                self.sock = socket.create_connection(("localhost", self.port))
                break
            except OSError:
                time.sleep(0.05)
        self.sock.sendall(struct.pack("<i", self.team))

    def recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("server closed the connection")
            data += chunk
        return data

    def recv_ints(self, count: int) -> list[int]:
        return list(struct.unpack(f"<{count}i", self.recv_exact(4 * count)))

    def recv_board(self, n: int) -> list[list[int]]:
        flat = self.recv_ints(n * n)
        return [flat[x * n : (x + 1) * n] for x in range(n)]

    def get_map(self, n: int) -> tuple[bool, int, int, list[list[int]]]:
        """(end, id_package, player_id, mapStat) like the template's GetMap."""
        code, id_package = self.recv_ints(2)
        if code == 0:
            return True, id_package, 0, []
        (player_id,) = self.recv_ints(1)
        return False, id_package, player_id, self.recv_board(n)

    def get_board(self, n: int) -> tuple[bool, int, list[list[int]], list[list[int]]]:
        """(end, id_package, mapStat, sheepStat) like the template's GetBoard."""
        code, id_package = self.recv_ints(2)
        if code == 0:
            return True, id_package, [], []
        return False, id_package, self.recv_board(n), self.recv_board(n)

    def send_init_pos(self, id_package: int, pos: tuple[int, int]) -> None:
        self.sock.sendall(struct.pack("<4i", 1, id_package, pos[0], pos[1]))

    def send_step(self, id_package: int, step: Step) -> None:
        (x, y), m, d = step
        self.sock.sendall(struct.pack("<6i", 1, id_package, x, y, m, d))


def inside(n: int, x: int, y: int) -> bool:
    return 0 <= x < n and 0 <= y < n


def border_cells(map_stat: list[list[int]]) -> list[tuple[int, int]]:
    n = len(map_stat)
    cells = []
    for x in range(n):
        for y in range(n):
            if map_stat[x][y] != 0:
                continue
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nx, ny = x + dx, y + dy
                if not inside(n, nx, ny) or map_stat[nx][ny] == -1:
                    cells.append((x, y))
                    break
    return cells


def legal_steps(
    player: int, map_stat: list[list[int]], sheep_stat: list[list[int]]
) -> list[tuple[tuple[int, int], int]]:
    n = len(map_stat)
    steps = []
    for x in range(n):
        for y in range(n):
            if map_stat[x][y] != player or sheep_stat[x][y] < 2:
                continue
            for d, (dx, dy) in DIRS.items():
                nx, ny = x + dx, y + dy
                if inside(n, nx, ny) and map_stat[nx][ny] == 0:
                    steps.append(((x, y), d))
    return steps


def main(argv: list[str]) -> int:
    args = list(argv)
    game, seed, fault, delay = 1, None, "", 0.0
    for flag in ("--game", "--seed", "--fault", "--delay"):
        if flag in args:
            k = args.index(flag)
            value = args[k + 1]
            del args[k : k + 2]
            if flag == "--game":
                game = int(value)
            elif flag == "--seed":
                seed = int(value)
            elif flag == "--delay":
                delay = float(value)
            else:
                fault = value
    team = int(args[0])
    port = int(args[1]) if len(args) > 1 else 8887
    n = 15 if game == 2 else 12
    rng = random.Random(seed)

    conn = Connection(port, team)
    if fault == "silent":  # connects, never sends its team id
        conn.sock = socket.create_connection(("localhost", port))
        time.sleep(60)
        return 0
    conn.connect()
    if fault == "halfframe_id":  # the team id is seated: send two bytes of a reply and stall
        conn.sock.sendall(b"\x01\x00")
        time.sleep(60)
        return 0

    end, id_package, player_id, map_stat = conn.get_map(n)
    if end:
        return 0
    cells = border_cells(map_stat)
    pos = rng.choice(cells)
    if fault == "illegal":  # an obstacle: well framed, not a free border cell
        pos = next((x, y) for x in range(n) for y in range(n) if map_stat[x][y] == -1)
    if fault == "late":
        time.sleep(1.0)
    conn.send_init_pos(id_package, pos)
    print("team", team, "is player", player_id, "placed at", pos, flush=True)

    turns = 0
    previous_id = id_package
    while True:
        end, id_package, map_stat, sheep_stat = conn.get_board(n)
        if end:
            print("game over after", turns, "boards", flush=True)
            return 0
        turns += 1
        time.sleep(delay)
        for x in range(n):
            for y in range(n):
                if game == 3 and map_stat[x][y] not in (player_id, -1, 0) and sheep_stat[x][y]:
                    print("SAW HIDDEN COUNT", x, y, flush=True)
        steps = legal_steps(player_id, map_stat, sheep_stat)
        if not steps:
            print("BOARD WITHOUT MOVE", flush=True)
            # The arena sends no board to a seat without moves; any reply is ignored anyway.
            conn.send_step(id_package, ((0, 0), 1, 1))
            continue
        (x, y), d = rng.choice(steps)
        m = rng.randint(1, sheep_stat[x][y] - 1)
        step = ((x, y), m, d)
        if fault == "crash" and turns == 2:
            raise RuntimeError("crashing on purpose")
        if fault == "quit" and turns == 2:
            conn.sock.close()
            return 0
        if fault == "hang" and turns == 2:
            time.sleep(600)
        if fault == "garbage" and turns == 2:
            conn.sock.sendall(b"\xde\xad\xbe\xef" * 1000)
            time.sleep(600)
        if fault == "flood" and turns == 2:
            payload = struct.pack("<6i", 1, previous_id, x, y, m, d) * 20000
            with contextlib.suppress(OSError):
                conn.sock.sendall(payload)
            time.sleep(600)
        if fault == "illegal" and turns <= 3:
            step = ((x, y), sheep_stat[x][y], d)  # moves every sheep: illegal
        if fault == "late" and turns <= 2:
            time.sleep(1.0)
        if fault == "stale" and 2 <= turns <= 4:  # answers the previous board again
            conn.sock.sendall(struct.pack("<6i", 1, previous_id, x, y, m, d))
        previous_id = id_package
        if fault == "reconnect" and turns == 2:
            conn.sock.close()
            time.sleep(0.2)
            conn.connect()
            continue
        if fault == "transposed":  # the classic bug: swapped x and y
            step = ((y, x), m, d)
        conn.send_step(id_package, step)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ConnectionError as exc:
        print("connection lost:", exc, flush=True)
        sys.exit(1)
