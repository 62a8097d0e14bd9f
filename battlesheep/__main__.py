from battlesheep.cli import main

raise SystemExit(main())
