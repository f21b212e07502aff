#!/usr/bin/env bash
# Interleaved rounds: the loader before (451b76d) and after this change, and LOAD DATA, at one size.
cd /work/main; eval "$(scripts/db env)"
M="mariadb --defaults-file=$ZB_MY_CNF --local-infile=1 $ZB_MY_DATABASE"
f=$1; rounds=$2; out=$3
: > $out
for b in innodb myisam; do
  build/bin/loader -q --mode bulk -b $b --allow-shrink --raw -f $f --set $b.table=swab_$b >/dev/null
done
for r in $(seq 1 $rounds); do
  for b in innodb myisam; do
    for tool in old new native; do
      case $tool in
        old) cmd="/tmp/sw/old/build/bin/loader -q --mode bulk -b $b --allow-shrink --raw -f $f --set $b.table=swab_$b";;
        new) cmd="build/bin/loader -q --mode bulk -b $b --allow-shrink --raw -f $f --set $b.table=swab_$b";;
        native) cmd="$M -e \"DROP TABLE IF EXISTS n_$b; CREATE TABLE n_$b LIKE swab_$b; LOAD DATA LOCAL INFILE '$f' INTO TABLE n_$b CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\\\"' ESCAPED BY '' LINES TERMINATED BY '\\r\\n'; SHOW WARNINGS LIMIT 3\"";;
      esac
      s=$(date +%s.%N); eval "$cmd" >/dev/null || echo "FAIL $tool $b" >&2; e=$(date +%s.%N)
      echo "$r $b $tool $(echo "$e - $s" | bc)" >> $out
      [ $tool = native ] && $M -e "DROP TABLE n_$b"
    done
  done
done
