# SPDX-License-Identifier: GPL-2.0
# bash completion for flowbulk(8): objects, commands, families and keywords.

_flowbulk() {
	local cur prev words=("${COMP_WORDS[@]}") i object='' command='' candidates=''
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	case $prev in
	-f | --file)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	esac
	# The object and command typed so far (options skipped).
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${words[i]} in
		-f | --file) i=$((i + 1)) ;;
		-*) ;;
		*)
			if [ -z "$object" ]; then
				object=${words[i]}
			elif [ -z "$command" ]; then
				command=${words[i]}
			fi
			;;
		esac
	done

	if [ -z "$object" ]; then
		if [[ $cur == -* ]]; then
			candidates='-j --json -p --pretty -s --statistics -f --file -V --version -h --help'
		else
			candidates='table flowtable offload attach detach stats monitor help'
		fi
	elif [ -z "$command" ]; then
		case $object in
		table | flowtable | offload) candidates='add delete list help' ;;
		attach) candidates='list ip ip6 inet help' ;;
		detach) candidates='ip ip6 inet help' ;;
		stats) candidates='show reset help' ;;
		monitor) candidates='interval count help' ;;
		*) candidates='help' ;;
		esac
	else
		case $prev in
		add | delete | list) candidates='ip ip6 inet' ;;
		hook) candidates='ingress early_ingress' ;;
		proto) candidates='tcp udp all' ;;
		position) candidates='top bottom after before' ;;
		devices)
			candidates=$(ls /sys/class/net 2>/dev/null)
			;;
		*)
			case $object in
			flowtable) candidates='hook priority devices counter' ;;
			offload)
				if [ "$command" = add ]; then
					candidates='proto counter chain position'
				else
					candidates='proto chain'
				fi
				;;
			esac
			;;
		esac
	fi
	mapfile -t COMPREPLY < <(compgen -W "$candidates" -- "$cur")
}
complete -F _flowbulk flowbulk
