// A player written the way the course's C++ client template (STcpClient.h +
// Sample.cpp) works: blocking sockets, GetMap / SendInitPos / GetBoard /
// SendStep, mapStat[x][y] with x the first index as on the wire. Nothing of
// this project is used: it is an independent implementation of the client side
// of the protocol (RULES.md section 4), so the arena is tested against what
// students compile.
//
//     course_template_player TEAM_ID [PORT] [--game G] [--seed S]
//
// Build: g++ -std=c++17 -O2 -Wall -Wextra course_template_player.cpp
//        Windows: cl /std:c++17 /EHsc course_template_player.cpp ws2_32.lib
//              or x86_64-w64-mingw32-g++ -std=c++17 ... course_template_player.cpp -lws2_32
//
// It places on a random free border cell and plays random legal moves. It also
// checks, on the board after each of its own replies, that the server applied
// the reply as the rules say (placement, slide as far as it can, split), and
// prints a line starting with "MISMATCH" if not: the tests look for it.

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <ws2tcpip.h>
#ifdef _MSC_VER
#pragma comment(lib, "ws2_32.lib")
#endif
using socket_t = SOCKET;
static const socket_t kNoSocket = INVALID_SOCKET;
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
using socket_t = int;
static const socket_t kNoSocket = -1;
#endif

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

const int MAX_N = 15;
int N = 12;  // never sent by the server: the player must know its setting

// The keypad table of RULES.md: dir -> (dx on the first index, dy on the second).
struct Dir {
    int dir, dx, dy;
};
const Dir DIRS[8] = {{1, -1, -1}, {2, 0, -1}, {3, 1, -1}, {4, -1, 0},
                     {6, 1, 0},   {7, -1, 1}, {8, 0, 1},  {9, 1, 1}};

socket_t g_socket = kNoSocket;

struct ConnectionLost : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void CloseSocket(socket_t s) {
#ifdef _WIN32
    closesocket(s);
#else
    close(s);
#endif
}

// ---- framing: little-endian int32, whatever the host's byte order --------

// Explicit byte assembly instead of copying an int's bytes (as the template
// does), so the wire order does not depend on the host's.
void PutInt32(unsigned char* out, int32_t value) {
    uint32_t u;
    std::memcpy(&u, &value, sizeof u);  // two's complement bit pattern, no UB
    for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>((u >> (8 * i)) & 0xFFu);
}

int32_t GetInt32(const unsigned char* in) {
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= static_cast<uint32_t>(in[i]) << (8 * i);
    int32_t value;
    std::memcpy(&value, &u, sizeof value);
    return value;
}

// recv may return any part of a frame: loop until all of it is in.
void RecvExact(unsigned char* buf, size_t len) {
    size_t got = 0;
    while (got < len) {
#ifdef _WIN32
        int r = recv(g_socket, reinterpret_cast<char*>(buf + got), static_cast<int>(len - got), 0);
#else
        ssize_t r = recv(g_socket, buf + got, len - got, 0);
#endif
        if (r <= 0) throw ConnectionLost("server closed the connection");
        got += static_cast<size_t>(r);
    }
}

void SendAll(const unsigned char* buf, size_t len) {
    size_t sent = 0;
    while (sent < len) {
#ifdef _WIN32
        int r = send(g_socket, reinterpret_cast<const char*>(buf + sent),
                     static_cast<int>(len - sent), 0);
#else
        ssize_t r = send(g_socket, buf + sent, len - sent, 0);
#endif
        if (r <= 0) throw ConnectionLost("send failed");
        sent += static_cast<size_t>(r);
    }
}

std::vector<int> RecvInts(size_t count) {
    std::vector<unsigned char> bytes(4 * count);
    RecvExact(bytes.data(), bytes.size());
    std::vector<int> ints(count);
    for (size_t i = 0; i < count; ++i) ints[i] = GetInt32(&bytes[4 * i]);
    return ints;
}

void SendInts(const std::vector<int>& ints) {
    std::vector<unsigned char> bytes(4 * ints.size());
    for (size_t i = 0; i < ints.size(); ++i) PutInt32(&bytes[4 * i], ints[i]);
    SendAll(bytes.data(), bytes.size());  // one send per frame, as the template
}

// x outer, y inner: the wire's order, so board[x][y] is the cell (x, y).
void RecvBoard(int board[MAX_N][MAX_N]) {
    std::vector<int> flat = RecvInts(static_cast<size_t>(N * N));
    for (int x = 0; x < N; ++x)
        for (int y = 0; y < N; ++y) board[x][y] = flat[static_cast<size_t>(x * N + y)];
}

// ---- connection ----------------------------------------------------------

// The course's server starts the players before it listens, and so may ours on
// a slow machine: retry for a while instead of failing on the first refusal.
void ConnectToServer(int port, int team) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
        socket_t s = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
        if (s == kNoSocket) throw ConnectionLost("cannot create a socket");
        sockaddr_in addr;
        std::memset(&addr, 0, sizeof addr);
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            g_socket = s;
            break;
        }
        CloseSocket(s);
        if (std::chrono::steady_clock::now() >= deadline)
            throw ConnectionLost("cannot connect to 127.0.0.1:" + std::to_string(port));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    SendInts({team});
}

// ---- the template's four calls ---------------------------------------------

// Returns true on the game-over header (e.g. an unknown team id), as GetBoard.
bool GetMap(int& id_package, int& playerID, int mapStat[MAX_N][MAX_N]) {
    std::vector<int> header = RecvInts(2);
    id_package = header[1];
    if (header[0] == 0) return true;
    playerID = RecvInts(1)[0];
    RecvBoard(mapStat);
    return false;
}

void SendInitPos(int id_package, const std::vector<int>& pos) {
    SendInts({1, id_package, pos[0], pos[1]});
}

// Returns true when the game is over: the header's code is 0 and nothing follows it.
bool GetBoard(int& id_package, int mapStat[MAX_N][MAX_N], int sheepStat[MAX_N][MAX_N]) {
    std::vector<int> header = RecvInts(2);
    id_package = header[1];
    if (header[0] == 0) return true;
    RecvBoard(mapStat);
    RecvBoard(sheepStat);
    return false;
}

// step = <x, y, m, dir>
void SendStep(int id_package, const std::vector<int>& step) {
    SendInts({1, id_package, step[0], step[1], step[2], step[3]});
}

// ---- the rules the player needs ----------------------------------------------

bool Inside(int x, int y) { return 0 <= x && x < N && 0 <= y && y < N; }

// A free playing cell with a 4-neighbour off the board or an obstacle.
std::vector<int> InitPos(int mapStat[MAX_N][MAX_N], std::mt19937& rng) {
    static const int FOUR[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
    std::vector<std::vector<int>> cells;
    for (int x = 0; x < N; ++x)
        for (int y = 0; y < N; ++y) {
            if (mapStat[x][y] != 0) continue;
            for (const auto& d : FOUR) {
                int nx = x + d[0], ny = y + d[1];
                if (!Inside(nx, ny) || mapStat[nx][ny] == -1) {
                    cells.push_back({x, y});
                    break;
                }
            }
        }
    if (cells.empty()) return {0, 0};  // cannot happen on a legal board; the server then picks
    std::uniform_int_distribution<size_t> pick(0, cells.size() - 1);
    return cells[pick(rng)];
}

// Where a group leaving (x, y) in direction d stops: as far as free cells go.
void Slide(int mapStat[MAX_N][MAX_N], int x, int y, const Dir& d, int& ex, int& ey) {
    ex = x;
    ey = y;
    while (Inside(ex + d.dx, ey + d.dy) && mapStat[ex + d.dx][ey + d.dy] == 0) {
        ex += d.dx;
        ey += d.dy;
    }
}

// A random legal <x, y, m, dir>, or an empty vector if there is none.
std::vector<int> GetStep(int playerID, int mapStat[MAX_N][MAX_N], int sheepStat[MAX_N][MAX_N],
                         std::mt19937& rng) {
    std::vector<std::vector<int>> moves;  // <x, y, index in DIRS>
    for (int x = 0; x < N; ++x)
        for (int y = 0; y < N; ++y) {
            if (mapStat[x][y] != playerID || sheepStat[x][y] < 2) continue;
            for (int k = 0; k < 8; ++k) {
                int nx = x + DIRS[k].dx, ny = y + DIRS[k].dy;
                if (Inside(nx, ny) && mapStat[nx][ny] == 0) moves.push_back({x, y, k});
            }
        }
    if (moves.empty()) return {};
    std::uniform_int_distribution<size_t> pick(0, moves.size() - 1);
    const std::vector<int>& mv = moves[pick(rng)];
    std::uniform_int_distribution<int> split(1, sheepStat[mv[0]][mv[1]] - 1);
    return {mv[0], mv[1], split(rng), DIRS[mv[2]].dir};
}

// ---- the game -------------------------------------------------------------

struct Expected {  // what the next board must show after our own reply
    bool active = false;
    int x = 0, y = 0, count = 0;  // the cell we moved from (or placed on) and what stays
    int ex = 0, ey = 0, m = 0;    // where the moved group must be, and its size
};

// Other players cannot touch our cells, so after our reply the next board we
// are sent shows exactly its effect on our cells, whatever they did meanwhile.
void CheckApplied(const Expected& e, int playerID, int mapStat[MAX_N][MAX_N],
                  int sheepStat[MAX_N][MAX_N]) {
    if (!e.active) return;
    bool ok = mapStat[e.x][e.y] == playerID && sheepStat[e.x][e.y] == e.count;
    if (e.m > 0) ok = ok && mapStat[e.ex][e.ey] == playerID && sheepStat[e.ex][e.ey] == e.m;
    if (!ok)
        std::cout << "MISMATCH: expected " << e.count << " at (" << e.x << ", " << e.y << ")"
                  << " and " << e.m << " at (" << e.ex << ", " << e.ey << "), board shows "
                  << mapStat[e.x][e.y] << "/" << sheepStat[e.x][e.y] << " and "
                  << mapStat[e.ex][e.ey] << "/" << sheepStat[e.ex][e.ey] << std::endl;
}

int Play(int team, int port, int game, std::mt19937& rng) {
    const int sheep = game == 2 ? 32 : 16;
    int id_package = 0, playerID = 0;
    int mapStat[MAX_N][MAX_N] = {};
    int sheepStat[MAX_N][MAX_N] = {};

    ConnectToServer(port, team);
    if (GetMap(id_package, playerID, mapStat)) {
        std::cout << "game over before the initial map" << std::endl;
        return 0;
    }
    std::vector<int> pos = InitPos(mapStat, rng);
    SendInitPos(id_package, pos);
    std::cout << "team " << team << " is player " << playerID << " placed at (" << pos[0] << ", "
              << pos[1] << ")" << std::endl;

    Expected expected;
    expected.active = true;
    expected.x = pos[0];
    expected.y = pos[1];
    expected.count = sheep;

    int boards = 0;
    while (true) {
        if (GetBoard(id_package, mapStat, sheepStat)) {
            std::cout << "game over after " << boards << " boards" << std::endl;
            return 0;
        }
        ++boards;
        CheckApplied(expected, playerID, mapStat, sheepStat);
        expected.active = false;
        int own = 0;
        for (int x = 0; x < N; ++x)
            for (int y = 0; y < N; ++y) {
                if (mapStat[x][y] == playerID) own += sheepStat[x][y];
                // Game 3: the server must not send other players' counts.
                else if (game == 3 && mapStat[x][y] > 0 && sheepStat[x][y] != 0)
                    std::cout << "SAW HIDDEN COUNT " << x << " " << y << std::endl;
            }
        if (own != sheep)
            std::cout << "MISMATCH: own cells hold " << own << " sheep, not " << sheep << std::endl;

        std::vector<int> step = GetStep(playerID, mapStat, sheepStat, rng);
        if (step.empty()) {
            // A server may send a board to a player with no move; it ignores the reply.
            std::cout << "BOARD WITHOUT MOVE" << std::endl;
            SendStep(id_package, {0, 0, 1, 1});
            continue;
        }
        const Dir* d = nullptr;
        for (const Dir& k : DIRS)
            if (k.dir == step[3]) d = &k;
        expected.active = true;
        expected.x = step[0];
        expected.y = step[1];
        expected.count = sheepStat[step[0]][step[1]] - step[2];
        expected.m = step[2];
        Slide(mapStat, step[0], step[1], *d, expected.ex, expected.ey);
        SendStep(id_package, step);
    }
}

bool ParseInt(const std::string& text, int& out) {
    try {
        size_t used = 0;
        out = std::stoi(text, &used);
        return used == text.size();
    } catch (const std::exception&) {
        return false;
    }
}

int Usage() {
    std::cerr << "usage: course_template_player TEAM_ID [PORT] [--game G] [--seed S]" << std::endl;
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    int team = 0, port = 8887, game = 1, seed = 0;
    bool seeded = false;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--game" || arg == "--seed") {
            if (i + 1 >= argc) return Usage();
            int value = 0;
            if (!ParseInt(argv[++i], value)) return Usage();
            if (arg == "--game") {
                game = value;
            } else {
                seed = value;
                seeded = true;
            }
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.empty() || positional.size() > 2 || !ParseInt(positional[0], team))
        return Usage();
    if (positional.size() == 2 && (!ParseInt(positional[1], port) || port <= 0 || port > 65535))
        return Usage();
    if (game < 1 || game > 4) return Usage();
    N = game == 2 ? 15 : 12;

    std::mt19937 rng(seeded ? static_cast<std::mt19937::result_type>(seed)
                            : std::random_device{}());

#ifdef _WIN32
    WSADATA wsa;
    if (WSAStartup(MAKEWORD(2, 2), &wsa) != 0) {
        std::cerr << "WSAStartup failed" << std::endl;
        return 1;
    }
#else
    // A write to a connection the server has closed must be an error, not a kill.
    signal(SIGPIPE, SIG_IGN);
#endif

    int rc = 0;
    try {
        rc = Play(team, port, game, rng);
    } catch (const ConnectionLost& exc) {
        std::cout << "connection lost: " << exc.what() << std::endl;
        rc = 1;
    }
    if (g_socket != kNoSocket) CloseSocket(g_socket);
#ifdef _WIN32
    WSACleanup();
#endif
    return rc;
}
