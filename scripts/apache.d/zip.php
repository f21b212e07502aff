<?php
/*
 * zip.php: PHP (Apache + mod_php, the 2008 kind of stack, and nginx +
 * PHP-FPM, today's: scripts/apache, scripts/php-fpm serve this one page)
 * answering the same lookups as the zipbench C server, with the same JSON.
 *
 *   /zip.php?backend=pg&code=1000001        sqlite, pg, innodb or myisam
 *   /zip.php?backend=pg&code=random&miss=0.1
 *   &persistent=0                           connect per request (default 1)
 *   &via=pgbouncer|pgpool                   pg only: through that pooler
 *                                           (scripts/pooler), default direct
 *   /zip.php?backend=pg&queries=N           N (1-500) codes of the key file, one
 *                                           after the other: {"backend","queries","answers":[...]}
 *   /zip.php?backend=pg&list=JIS            the listing page of one jis_code (HTML)
 *   /zip.php?backend=pg&code=C&cached=1     through APCu (php-apcu; apc.shm_size)
 *   POST /zip.php?backend=pg&update=CODE    read, then write {table}_hits' stamp
 *   POST /zip.php?backend=pg&updates=N      N codes of the key file so; off (403)
 *                                           unless ZB_WRITES lists the backend
 *                                           (ZB_WRITES=pg,innodb); the table is the
 *                                           C server's (writes = yes makes it)
 * The request types and their bytes: docs/REQUEST-TYPES.md.
 *
 * 200 {"backend":..,"code":..,"rows":[{15 columns}]}; errors as the C server
 * writes them, {"backend":..,"code":..,"error":..,"status":N}: 404 when no row
 * has the code or the backend is unknown, 400 when the code is not 7 digits,
 * 503 when the database cannot be reached.
 *
 * Connection parameters come from the environment that scripts/apache sets
 * with SetEnv and scripts/php-fpm with env[] (scripts/php-page.bash:
 * ZB_SQLITE_PATH, ZB_PG_SOCKET or ZB_PG_HOST, ZB_PG_PORT, ZB_PG_PASSFILE,
 * ZB_PGBOUNCER_HOST, ZB_PGBOUNCER_PORT, ZB_PGPOOL_HOST, ZB_PGPOOL_PORT,
 * ZB_MYSQL_SOCKET or ZB_MYSQL_HOST and ZB_MYSQL_PORT, ZB_MYSQL_PASSWORD,
 * ZB_*_TABLE, ZB_KEYS, ...), so tests can point it at
 * their own tables. via= only picks one of the configured targets: no host
 * or port is ever taken from the request. An unknown via, or via on
 * another backend than pg, is 400.
 *
 * What each backend does per request, persistent / not:
 *   pg      pg_pconnect + pg_execute of a statement prepared once per
 *           connection (it outlives the request with the connection; the
 *           first execute on a new connection fails, prepares, retries) /
 *           pg_connect + pg_query_params (one round trip: parse, bind and
 *           execute of the unnamed statement in one message). Through a
 *           pooler always the latter's unnamed statement (pgbouncer's
 *           transaction pooling hands each transaction any server
 *           connection, where a named statement may not exist), with
 *           scram-sha-256 over TCP, as the poolers ask (scripts/pooler).
 *   sqlite  PDO with ATTR_PERSISTENT true / false, opened read-only; the
 *           statement is prepared per request (in-process, no round trip).
 *   innodb, myisam  mysqli over the unix socket (or TCP), persistent with the "p:"
 *           host prefix / a new connection; utf8mb4 asked for in the
 *           handshake (no SET NAMES round trip). A statement dies with its
 *           request, so each request prepares, executes and closes it (two
 *           round trips); a reused persistent connection is also reset
 *           first (mysqlnd's change_user on every p: reuse, as Debian
 *           builds it: one more round trip, and what PHP sites get).
 *
 * code=random: PHP under mod_php keeps nothing of its own between requests
 * (no APCu here; statics die with the request), so a key list loaded into
 * memory would be reloaded on every request. Picking a row with SQL
 * (LIMIT 1 OFFSET n) costs a scan of n rows and would charge the database
 * for the picking. Instead the key file (build/ken_all.keys, one code a line)
 * is read at a random line by its byte offset: its lines have one width, so
 * that is one fseek and one short read, a cost that is the same for every
 * backend and small next to the lookup. The fairest comparison gives both
 * stacks the keys in the URL (loadgen --keys with code={key}); random is for
 * ab, which cannot vary its URL. A miss (share ?miss=RATIO) asks for a code
 * beginning with 000, which no Japanese postal code (and no generated one)
 * has.
 */

const ZB_COLUMNS = ['jis_code', 'old_code', 'zip_code', 'pref_kana', 'city_kana',
    'town_kana', 'pref', 'city', 'town', 'multi_code', 'koaza', 'has_chome',
    'multi_town', 'update_flag', 'reason'];
const ZB_FLAG_FROM = 9;   /* columns 9..14 are INTEGER flags */

function zb_env(string $name, string $default): string
{
    $v = $_SERVER[$name] ?? getenv($name);
    return ($v === false || $v === null || $v === '') ? $default : (string)$v;
}

function zb_reply(int $status, array $body): void
{
    http_response_code($status);
    header('Content-Type: application/json');
    echo json_encode($body, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
}

function zb_table(string $backend): string
{
    $t = zb_env('ZB_' . strtoupper($backend) . '_TABLE',
                $backend === 'innodb' || $backend === 'myisam' ? 'zipcode_' . $backend : 'zipcode');
    /* Only from the server's environment, but it goes into SQL: keep it a name. */
    return preg_match('/^[A-Za-z_][A-Za-z0-9_]*\z/', $t) ? $t : 'zipcode';
}

/* $col: zip_code (a lookup) or jis_code (the listing page): never request text. */
function zb_sql(string $table, string $param, string $col = 'zip_code'): string
{
    return 'SELECT ' . implode(', ', ZB_COLUMNS) . " FROM $table WHERE $col = $param";
}

/* A random key from the key file, or a miss; null if there is no file. */
function zb_random_key(float $miss): ?string
{
    if ($miss > 0 && mt_rand() / mt_getrandmax() < $miss)
        return sprintf('000%04d', mt_rand(0, 9999));
    $path = zb_env('ZB_KEYS', '');
    $f = $path === '' ? false : @fopen($path, 'rb');
    if ($f === false)
        return null;
    $first = fgets($f, 64);
    $size = fstat($f)['size'];
    $width = $first === false ? 0 : strlen($first);
    if ($width < 8 || $size % $width !== 0) {
        /* Lines of mixed width: walk to a random one (slow, but correct). */
        fclose($f);
        $file = new SplFileObject($path);
        $file->seek(PHP_INT_MAX);
        $file->seek(mt_rand(0, max(0, $file->key() - 1)));
        $key = trim((string)$file->current());
        return $key === '' ? null : $key;
    }
    fseek($f, mt_rand(0, intdiv($size, $width) - 1) * $width);
    $key = fread($f, 7);
    fclose($f);
    return $key === false || strlen($key) !== 7 ? null : $key;
}

/* Rows of one code as lists of strings/ints, in column order. */
/* The pg targets via= may name: [host, port] from the environment. */
function zb_pg_target(string $via): array
{
    switch ($via) {
    case 'pgbouncer':
        return [zb_env('ZB_PGBOUNCER_HOST', '127.0.0.1'), zb_env('ZB_PGBOUNCER_PORT', '16432')];
    case 'pgpool':
        return [zb_env('ZB_PGPOOL_HOST', '127.0.0.1'), zb_env('ZB_PGPOOL_PORT', '19999')];
    default:
        return [zb_socket_or_host('PG'), zb_env('ZB_PG_PORT', '5432')];
    }
}

/* A socket wins over a TCP host, as in the C server (lib/backend_*.c); the
 * lab's config names no sockets: its databases are on another host. */
function zb_socket_or_host(string $db): string
{
    $socket = zb_env("ZB_{$db}_SOCKET", '');
    return $socket !== '' ? $socket : zb_env("ZB_{$db}_HOST", '127.0.0.1');
}

/* libpq's conninfo for the pg target via names; the password from libpq's
 * passfile, which scripts/apache copies for us. */
function zb_pg_conninfo(string $via): string
{
    [$host, $port] = zb_pg_target($via);
    return sprintf("host=%s port=%s user=%s dbname=%s passfile='%s' connect_timeout=2",
        $host, $port, zb_env('ZB_PG_USER', 'zipbench'), zb_env('ZB_PG_DATABASE', 'zipbench'),
        addcslashes(zb_env('ZB_PG_PASSFILE', ''), "'\\"));
}

/* A mysqli connection, persistent with the "p:" host prefix, errors as exceptions. */
function zb_mysqli(bool $persistent): mysqli
{
    mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
    $my = mysqli_init();
    $my->options(MYSQLI_SET_CHARSET_NAME, 'utf8mb4');
    $my->options(MYSQLI_OPT_CONNECT_TIMEOUT, 2);
    $socket = zb_env('ZB_MYSQL_SOCKET', '');
    $my->real_connect(($persistent ? 'p:' : '') . ($socket !== '' ? 'localhost' : zb_socket_or_host('MYSQL')),
        zb_env('ZB_MYSQL_USER', 'zipbench'), zb_env('ZB_MYSQL_PASSWORD', ''),
        zb_env('ZB_MYSQL_DATABASE', 'zipbench'), (int)zb_env('ZB_MYSQL_PORT', '3306'), $socket);
    return $my;
}

function zb_lookup(string $backend, string $code, bool $persistent, string $via,
                   string $col = 'zip_code'): array
{
    $table = zb_table($backend);
    switch ($backend) {
    case 'pg':
        $conn = zb_pg_conninfo($via);
        if ($persistent && $via === 'direct') {
            $db = @pg_pconnect($conn);
            if ($db === false)
                throw new RuntimeException('cannot connect: ' . (error_get_last()['message'] ?? '?'));
            $name = 'zb_lookup_' . $table . '_' . $col;
            $res = @pg_execute($db, $name, [$code]);
            if ($res === false) {
                if (@pg_prepare($db, $name, zb_sql($table, '$1', $col)) === false)
                    throw new RuntimeException(pg_last_error($db));
                $res = @pg_execute($db, $name, [$code]);
            }
        } else {
            $db = $persistent ? @pg_pconnect($conn) : @pg_connect($conn, PGSQL_CONNECT_FORCE_NEW);
            if ($db === false)
                throw new RuntimeException('cannot connect: ' . (error_get_last()['message'] ?? '?'));
            $res = @pg_query_params($db, zb_sql($table, '$1', $col), [$code]);
        }
        if ($res === false)
            throw new RuntimeException(pg_last_error($db));
        $rows = pg_fetch_all($res, PGSQL_NUM);
        if (!$persistent)
            pg_close($db);
        return $rows;
    case 'sqlite':
        $pdo = new PDO('sqlite:' . zb_env('ZB_SQLITE_PATH', 'zipbench.sqlite'), null, null, [
            PDO::ATTR_PERSISTENT => $persistent,
            PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
            PDO::SQLITE_ATTR_OPEN_FLAGS => PDO::SQLITE_OPEN_READONLY,
        ]);
        break;
    case 'innodb':
    case 'myisam':
        $my = zb_mysqli($persistent);
        $st = $my->prepare(zb_sql($table, '?', $col));
        $st->bind_param('s', $code);
        $st->execute();
        $rows = $st->get_result()->fetch_all(MYSQLI_NUM);
        $st->close();
        if (!$persistent)
            $my->close();
        return $rows;
    default:
        throw new DomainException('unknown backend');
    }
    $st = $pdo->prepare(zb_sql($table, '?', $col));
    $st->execute([$code]);
    $rows = $st->fetchAll(PDO::FETCH_NUM);
    $st = null;
    $pdo = null;
    return $rows;
}

$backend = (string)($_GET['backend'] ?? '');
$code = (string)($_GET['code'] ?? '');
$persistent = ($_GET['persistent'] ?? '1') !== '0';
$via = (string)($_GET['via'] ?? 'direct');

if (!in_array($backend, ['sqlite', 'pg', 'innodb', 'myisam'], true)) {
    zb_reply(404, ['error' => 'no such backend', 'status' => 404]);
    return;
}
if (!in_array($via, ['direct', 'pgbouncer', 'pgpool'], true) || ($via !== 'direct' && $backend !== 'pg')) {
    zb_reply(400, ['backend' => $backend, 'error' => 'via must be direct, pgbouncer or pgpool (pg only)',
                   'status' => 400]);
    return;
}
/* One code's answer, as /zip's: [status, the array json_encode writes]. */
function zb_code_answer(string $backend, string $code, bool $persistent, string $via): array
{
    $rows = zb_lookup($backend, $code, $persistent, $via);
    if (!$rows)
        return [404, ['backend' => $backend, 'code' => $code, 'error' => 'no such code', 'status' => 404]];
    $out = [];
    foreach ($rows as $r) {
        $o = [];
        foreach (ZB_COLUMNS as $i => $c)
            $o[$c] = $i >= ZB_FLAG_FROM ? (int)$r[$i] : (string)$r[$i];
        $out[] = $o;
    }
    return [200, ['backend' => $backend, 'code' => $code, 'rows' => $out]];
}

/* Reads the stamp of code in {table}_hits, then writes a new one made by
 * the database (the same statements as the C server's drivers,
 * backend.h's stamp_sql: a sequence's next value, or SQLite's largest
 * plus one), so stamps are unique and increasing across every writer,
 * this page's and the C server's: [was, stamp], or null when the table
 * has no row for code (or lost it before the write). Each statement
 * autocommits. */
function zb_write(string $backend, string $code, bool $persistent): ?array
{
    $hits = zb_table($backend) . '_hits';
    $read = "SELECT stamp FROM $hits WHERE zip_code = ";
    $stamp = false;
    switch ($backend) {
    case 'pg':
        $conn = zb_pg_conninfo('direct');
        $db = $persistent ? @pg_pconnect($conn) : @pg_connect($conn, PGSQL_CONNECT_FORCE_NEW);
        if ($db === false)
            throw new RuntimeException('cannot connect: ' . (error_get_last()['message'] ?? '?'));
        $res = @pg_query_params($db, $read . '$1', [$code]);
        if ($res === false)
            throw new RuntimeException(pg_last_error($db));
        $was = pg_fetch_result($res, 0, 0);
        if ($was !== false) {
            $res = @pg_query_params($db, "UPDATE $hits SET stamp = nextval('{$hits}_stamp') " .
                                    'WHERE zip_code = $1 RETURNING stamp', [$code]);
            if ($res === false)
                throw new RuntimeException(pg_last_error($db));
            $stamp = pg_fetch_result($res, 0, 0);
        }
        if (!$persistent)
            pg_close($db);
        break;
    case 'sqlite':
        // A persistent handle is found by its DSN, not its open flags: a key
        // of its own keeps the writer apart from the lookups' read-only one.
        $pdo = new PDO('sqlite:' . zb_env('ZB_SQLITE_PATH', 'zipbench.sqlite'), null, null, [
            PDO::ATTR_PERSISTENT => $persistent ? 'writer' : false,
            PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
            PDO::ATTR_TIMEOUT => 2,
        ]);
        $st = $pdo->prepare($read . '?');
        $st->execute([$code]);
        $was = $st->fetchColumn();
        if ($was !== false) {
            $st = $pdo->prepare("UPDATE $hits SET stamp = (SELECT COALESCE(MAX(stamp), 0) + 1 " .
                                "FROM $hits) WHERE zip_code = ? RETURNING stamp");
            $st->execute([$code]);
            $stamp = $st->fetchColumn();
            $st->closeCursor();
        }
        break;
    case 'innodb':
    case 'myisam':
        $my = zb_mysqli($persistent);
        $st = $my->prepare($read . '?');
        $st->bind_param('s', $code);
        $st->execute();
        $row = $st->get_result()->fetch_row();
        $st->close();
        $was = $row === null ? false : $row[0];
        if ($was !== false) {
            $st = $my->prepare("UPDATE $hits SET stamp = LAST_INSERT_ID(NEXTVAL({$hits}_stamp)) " .
                               'WHERE zip_code = ?');
            $st->bind_param('s', $code);
            $st->execute();
            if ($st->affected_rows === 1)
                $stamp = $st->insert_id;
            $st->close();
        }
        if (!$persistent)
            $my->close();
        break;
    default:
        throw new DomainException('unknown backend');
    }
    return $was === false || $stamp === false ? null : [(int)$was, (int)$stamp];
}

function zb_html(string $s): string
{
    return htmlspecialchars($s, ENT_QUOTES);
}

/* The listing page of one jis_code (docs/REQUEST-TYPES.md): sorted by
 * zip_code, town_kana, town (byte order), escaped, the C server's bytes. */
function zb_list_page(array $rows): string
{
    usort($rows, fn($a, $b) => strcmp($a[2], $b[2]) ?: strcmp($a[5], $b[5]) ?: strcmp($a[8], $b[8]));
    $page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" . zb_html($rows[0][6]) . ' '
          . zb_html($rows[0][7]) . "</title></head><body>\n<table>\n"
          . "<tr><th>zip_code</th><th>town</th><th>town_kana</th></tr>\n";
    foreach ($rows as $r)
        $page .= '<tr><td>' . zb_html($r[2]) . '</td><td>' . zb_html($r[8]) . '</td><td>'
               . zb_html($r[5]) . "</td></tr>\n";
    return $page . "</table>\n</body></html>\n";
}

try {
    if (isset($_GET['update']) || isset($_GET['updates'])) {
        /* Writes: POST only, off unless the environment turns them on. */
        if (($_SERVER['REQUEST_METHOD'] ?? 'GET') !== 'POST') {
            header('Allow: POST');
            zb_reply(405, ['backend' => $backend, 'error' => 'method not allowed: only POST', 'status' => 405]);
            return;
        }
        if (!in_array($backend, explode(',', zb_env('ZB_WRITES', '')), true)) {
            zb_reply(403, ['backend' => $backend,
                           'error' => 'writes are off for this backend (writes = yes in its [backend] section)',
                           'status' => 403]);
            return;
        }
        $many = isset($_GET['updates']);
        if ($many) {
            $q = (string)$_GET['updates'];
            if (!preg_match('/^[0-9]{1,3}\z/', $q) || (int)$q < 1 || (int)$q > 500) {
                zb_reply(400, ['backend' => $backend, 'error' => 'queries must be a whole number from 1 to 500',
                               'status' => 400]);
                return;
            }
            $codes = [];
            for ($i = 0; $i < (int)$q; $i++)
                $codes[] = zb_random_key(0);
        } else {
            $codes = [(string)$_GET['update']];
            if (!preg_match('/^[0-9]{7}\z/', $codes[0])) {
                zb_reply(400, ['backend' => $backend, 'error' => 'the code must be exactly 7 digits 0-9',
                               'status' => 400]);
                return;
            }
        }
        $written = [];
        foreach ($codes as $c) {
            $w = $c === null ? null : zb_write($backend, $c, $persistent);
            if ($w === null) {
                zb_reply(404, ['backend' => $backend, 'code' => $c, 'error' => 'no such code', 'status' => 404]);
                return;
            }
            $written[] = ['code' => $c, 'was' => $w[0], 'stamp' => $w[1]];
        }
        zb_reply(200, $many ? ['backend' => $backend, 'queries' => count($codes), 'written' => $written]
                            : ['backend' => $backend] + $written[0]);
        return;
    }
    if (isset($_GET['queries'])) {
        /* Multiple queries: N codes of the key file, one after the other on one connection. */
        $q = (string)$_GET['queries'];
        if (!preg_match('/^[0-9]{1,3}\z/', $q) || (int)$q < 1 || (int)$q > 500) {
            zb_reply(400, ['backend' => $backend, 'error' => 'queries must be a whole number from 1 to 500',
                           'status' => 400]);
            return;
        }
        $answers = [];
        for ($i = 0; $i < (int)$q; $i++) {
            $c = zb_random_key(0);
            if ($c === null) {
                zb_reply(503, ['backend' => $backend, 'error' => 'no key file for queries (ZB_KEYS)', 'status' => 503]);
                return;
            }
            $answers[] = zb_code_answer($backend, $c, $persistent, $via)[1];
        }
        zb_reply(200, ['backend' => $backend, 'queries' => (int)$q, 'answers' => $answers]);
        return;
    }
    if (isset($_GET['list'])) {
        $jis = (string)$_GET['list'];
        if (!preg_match('/^[0-9]{5}\z/', $jis)) {
            zb_reply(400, ['backend' => $backend,
                           'error' => 'the local government code (jis_code) must be exactly 5 digits 0-9', 'status' => 400]);
            return;
        }
        $rows = zb_lookup($backend, $jis, $persistent, $via, 'jis_code');
        if (!$rows) {
            zb_reply(404, ['backend' => $backend, 'error' => "no rows have jis_code $jis", 'status' => 404]);
            return;
        }
        header('Content-Type: text/html; charset=utf-8');
        echo zb_list_page($rows);
        return;
    }
    if ($code === 'random') {
        $code = zb_random_key((float)($_GET['miss'] ?? 0));
        if ($code === null) {
            zb_reply(503, ['backend' => $backend, 'error' => 'no key file for code=random (ZB_KEYS)',
                           'status' => 503]);
            return;
        }
    } elseif (!preg_match('/^[0-9]{7}\z/', $code)) {
        zb_reply(400, ['backend' => $backend, 'error' => "the code must be exactly 7 digits 0-9 (or 'random')",
                       'status' => 400]);
        return;
    }
    /* cached=1: APCu's shared memory in front of the database (its size
     * is apc.shm_size); only 200s are kept, as the C server keeps them. */
    $apcu = ($_GET['cached'] ?? '0') === '1' && function_exists('apcu_enabled') && apcu_enabled();
    $key = "zb:$backend:" . zb_table($backend) . ":$code";
    if ($apcu && ($hit = apcu_fetch($key)) !== false) {
        header('Content-Type: application/json');
        echo $hit;
        return;
    }
    [$status, $body] = zb_code_answer($backend, $code, $persistent, $via);
    if ($apcu && $status === 200)
        apcu_store($key, json_encode($body, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES) . "\n");
    zb_reply($status, $body);
} catch (Throwable $e) {
    error_log("zip.php: $backend: " . $e->getMessage());
    zb_reply(503, ['backend' => $backend, 'code' => $code, 'error' => 'database unavailable',
                   'status' => 503]);
}
